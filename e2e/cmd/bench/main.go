// Command bench measures our etcd and upstream etcd side by side, in the same run on the same
// machine, with the same flags and workloads (bounded in count and time), and writes a Markdown
// report. `make bench` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/e2e"
	"etcdx/upgradelab/cluster"
)

// server is one member the bench runs: the shared harness's member, with the bench's label and
// the temporary directory that holds its data and log.
type server struct {
	*cluster.Member
	label string
	dir   string
}

// newServer prepares (does not start) member name of binary bin, alone in a new cluster until
// its InitialCluster says otherwise.
func newServer(label, bin, name string) (*server, error) {
	dir, err := os.MkdirTemp("", "bench-"+strings.ReplaceAll(label, " ", "-")+"-")
	if err != nil {
		return nil, err
	}
	m := &cluster.Member{Name: name, Bin: bin, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "server.log"),
		State: "new", LogLevel: "error"}
	if m.ClientURL, err = cluster.FreeURL(); err == nil {
		m.PeerURL, err = cluster.FreeURL()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &server{Member: m, label: label, dir: dir}, nil
}

func (s *server) waitHealthy(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.WaitHealthy(ctx); err != nil {
		return fmt.Errorf("%s %s did not become healthy (log in %s): %w", s.label, s.Name, s.dir, err)
	}
	return nil
}

// peakRSS is the process's high-water resident set size in bytes.
func (s *server) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Pid()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// terminate sends SIGTERM and waits for the process to exit (SIGKILL after 10s).
func (s *server) terminate() { s.Stop(10 * time.Second) }

func (s *server) stop() {
	s.terminate()
	os.RemoveAll(s.dir)
}

type result struct {
	ops      int
	errors   int
	elapsed  time.Duration
	p50, p99 time.Duration
}

func (r result) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// run executes total operations spread over clients goroutines sharing conns connections, and
// stops early at the time limit.
func run(endpoints []string, conns, clients, total int, limit time.Duration, op func(ctx context.Context, c *clientv3.Client, i int) error) (result, error) {
	cs := make([]*clientv3.Client, conns)
	for i := range cs {
		c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return result{}, err
		}
		defer c.Close()
		cs[i] = c
	}
	var mu sync.Mutex
	lat := make([]time.Duration, 0, total)
	errs := 0
	next := make(chan int, total)
	for i := 0; i < total; i++ {
		next <- i
	}
	close(next)
	deadline := time.Now().Add(limit)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := cs[w%conns]
			local := make([]time.Duration, 0, total/clients+1)
			lerr := 0
			for i := range next {
				if time.Now().After(deadline) {
					break
				}
				t0 := time.Now()
				octx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := op(octx, c, i)
				cancel()
				if err != nil {
					lerr++
					continue
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, local...)
			errs += lerr
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	r := result{ops: len(lat), errors: errs, elapsed: time.Since(start)}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r, nil
}

type workload struct {
	name  string
	total int
	op    func(ctx context.Context, c *clientv3.Client, i int) error
}

// handMarker starts the part of the report that people write (measurements made by other
// commands, such as the upgrade lab's); the bench keeps it when it rewrites the file.
const handMarker = "<!-- make bench keeps everything below this line -->"

// handWritten is the kept part of the report at path, marker included ("" when there is none).
func handWritten(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(b), handMarker); i >= 0 {
		return "\n" + string(b[i:])
	}
	return ""
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

func dur(ns float64) time.Duration { return time.Duration(ns).Round(time.Microsecond) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func main() {
	ours := flag.String("ours", "bin/etcd", "our etcd binary")
	upstream := flag.String("upstream", "", "upstream etcd binary (default: built from the Go module proxy)")
	out := flag.String("out", "docs/performance.md", "report path")
	clients := flag.Int("clients", 64, "concurrent clients")
	conns := flag.Int("conns", 8, "gRPC connections shared by the clients")
	scale := flag.Int("scale", 1, "multiplies the operation counts")
	limit := flag.Duration("limit", 60*time.Second, "time limit per workload")
	catchupBytes := flag.Int64("catchup-bytes", 1<<30, "data a new member must catch up with")
	skipCluster := flag.Bool("skip-cluster", false, "only the single-member workloads")
	rounds := flag.Int("rounds", 3, "rounds of the single-member workloads, alternating which implementation goes first")
	flag.Parse()
	upstreamVersion := e2e.UpstreamVersion
	if *upstream == "" {
		dir, unreachable, err := e2e.BuildUpstream()
		if unreachable != "" || err != nil {
			fmt.Fprintln(os.Stderr, "bench: cannot compare without upstream etcd:", unreachable, err)
			os.Exit(1)
		}
		*upstream = filepath.Join(dir, "etcd")
	}
	val := strings.Repeat("v", 256)
	workloads := []workload{
		{"put (256 B values, unique keys)", 20000 * *scale, func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Put(ctx, fmt.Sprintf("bench/%08d", i), val)
			return err
		}},
		{"range, linearizable (1 key)", 40000 * *scale, func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Get(ctx, fmt.Sprintf("bench/%08d", i%(20000**scale)))
			return err
		}},
		{"range, serializable (1 key)", 40000 * *scale, func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Get(ctx, fmt.Sprintf("bench/%08d", i%(20000**scale)), clientv3.WithSerializable())
			return err
		}},
		{"range, 100 keys per request", 5000 * *scale, func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Get(ctx, fmt.Sprintf("bench/%08d", (i*100)%(20000**scale-100)), clientv3.WithRange(fmt.Sprintf("bench/%08d", (i*100)%(20000**scale-100)+100)))
			return err
		}},
		{"txn (compare version, put)", 10000 * *scale, func(ctx context.Context, c *clientv3.Client, i int) error {
			k := fmt.Sprintf("txn/%08d", i)
			_, err := c.Txn(ctx).If(clientv3.Compare(clientv3.Version(k), "=", 0)).Then(clientv3.OpPut(k, val)).Commit()
			return err
		}},
	}
	type subject struct{ label, bin string }
	subjects := []subject{{"ours", *ours}, {"upstream " + upstreamVersion, *upstream}}
	// results[label][round][workload]; the order alternates by round so that neither side always
	// runs on a machine warmed (or tired) by the other.
	results := map[string][][]result{}
	rss := map[string][]int64{}
	for round := 0; round < *rounds; round++ {
		order := subjects
		if round%2 == 1 {
			order = []subject{subjects[1], subjects[0]}
		}
		for _, sub := range order {
			s, err := newServer(sub.label, sub.bin, "b1")
			if err != nil {
				fail(err)
			}
			err = s.Start()
			if err == nil {
				err = s.waitHealthy(20 * time.Second)
			}
			if err != nil {
				s.stop()
				fail(err)
			}
			var rs []result
			for _, w := range workloads {
				r, err := run([]string{s.ClientURL}, *conns, *clients, w.total, *limit, w.op)
				if err != nil {
					s.stop()
					fail(err)
				}
				fmt.Printf("round %d %-12s %-34s %8d ops %6d errors %10.0f ops/s  p50 %-10v p99 %v\n", round+1, s.label, w.name, r.ops, r.errors, r.rate(), r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond))
				rs = append(rs, r)
			}
			results[s.label] = append(results[s.label], rs)
			rss[s.label] = append(rss[s.label], s.peakRSS())
			s.stop()
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# Performance\n\n")
	fmt.Fprintf(&b, "Measured by `make bench` on %s: one member each, %d clients over %d gRPC connections, loopback,\n", time.Now().UTC().Format("2006-01-02"), *clients, *conns)
	fmt.Fprintf(&b, "%d CPUs, %s/%s, %s. Both servers run with the same flags, a fresh member per round, %d rounds alternating which goes first.\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), *rounds)
	fmt.Fprintf(&b, "Command: `go run ./cmd/bench --ours %s --upstream <etcd %s built from the Go module proxy> --clients %d --conns %d --scale %d --rounds %d`\n\n", *ours, upstreamVersion, *clients, *conns, *scale, *rounds)
	fmt.Fprintf(&b, "Figures are medians over the rounds; the ratio is ours/upstream of the medians (above 1 is ours faster for ops/s, below 1 is ours quicker for p99), followed by each round's ratio.\n\n")
	fmt.Fprintf(&b, "| workload | ops | ours ops/s | upstream ops/s | ratio (rounds) | ours p50 | upstream p50 | ours p99 | upstream p99 | p99 ratio | errors (ours/upstream) |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	up := subjects[1].label
	for i, w := range workloads {
		pick := func(label string, f func(result) float64) []float64 {
			var xs []float64
			for _, rs := range results[label] {
				xs = append(xs, f(rs[i]))
			}
			return xs
		}
		rate := func(r result) float64 { return r.rate() }
		p50 := func(r result) float64 { return float64(r.p50) }
		p99 := func(r result) float64 { return float64(r.p99) }
		errs := func(r result) float64 { return float64(r.errors) }
		or, ur := pick("ours", rate), pick(up, rate)
		var perRound []string
		for j := range or {
			perRound = append(perRound, fmt.Sprintf("%.2f", or[j]/ur[j]))
		}
		o99, u99 := median(pick("ours", p99)), median(pick(up, p99))
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.2fx (%s) | %v | %v | %v | %v | %.2f | %.0f/%.0f |\n", w.name, w.total, median(or), median(ur),
			median(or)/median(ur), strings.Join(perRound, ", "), dur(median(pick("ours", p50))), dur(median(pick(up, p50))), dur(o99), dur(u99), o99/u99,
			sum(pick("ours", errs)), sum(pick(up, errs)))
	}
	toF := func(xs []int64) []float64 {
		var fs []float64
		for _, x := range xs {
			fs = append(fs, float64(x))
		}
		return fs
	}
	orss, urss := median(toF(rss["ours"])), median(toF(rss[up]))
	fmt.Fprintf(&b, "\nPeak resident memory (VmHWM) after all workloads, median over rounds: ours %.1f MiB, upstream %.1f MiB (ratio %.2f).\n",
		orss/(1<<20), urss/(1<<20), orss/urss)
	fmt.Fprintf(&b, "\nThe figures are from a shared 2-core machine; the per-round ratios show how much they move within this run. Compare ratios of one run, not runs with each other.\n")
	if !*skipCluster {
		var rows []clusterResult
		for _, s := range subjects {
			r, err := benchCluster(s.label, s.bin, *clients, *conns, *scale, *limit, *catchupBytes)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(1)
			}
			rows = append(rows, r)
		}
		writeClusterReport(&b, rows, *catchupBytes)
	}
	if err := os.WriteFile(*out, []byte(b.String()+handWritten(*out)), 0o644); err != nil {
		fail(err)
	}
	fmt.Println("wrote", *out)
}
