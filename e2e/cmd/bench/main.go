// Command bench measures our etcd and upstream etcd side by side, in the same run on the same
// machine, with the same flags and workloads (bounded in count and time), and writes a Markdown
// report. `make bench` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/e2e"
)

type server struct {
	label, bin string
	name       string
	dir        string
	client     string
	peer       string
	cluster    string // --initial-cluster; empty: a cluster of this member alone
	state      string // --initial-cluster-state
	cmd        *exec.Cmd
}

func (s *server) start() error {
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "bench-"+strings.ReplaceAll(s.label, " ", "-")+"-")
		if err != nil {
			return err
		}
		s.dir = dir
		s.client = fmt.Sprintf("http://127.0.0.1:%d", freePort())
		s.peer = fmt.Sprintf("http://127.0.0.1:%d", freePort())
	}
	if s.name == "" {
		s.name = "b1"
	}
	cluster, state := s.cluster, s.state
	if cluster == "" {
		cluster = s.name + "=" + s.peer
	}
	if state == "" {
		state = "new"
	}
	s.cmd = exec.Command(s.bin, "--name", s.name, "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", s.client, "--advertise-client-urls", s.client,
		"--listen-peer-urls", s.peer, "--initial-advertise-peer-urls", s.peer, "--initial-cluster", cluster,
		"--initial-cluster-state", state, "--log-level", "error")
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	return nil
}

func (s *server) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if r, err := (&http.Client{Timeout: 2 * time.Second}).Get(s.client + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s %s did not become healthy (log in %s)", s.label, s.name, s.dir)
}

// peakRSS is the process's high-water resident set size in bytes.
func (s *server) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
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

// terminate sends SIGTERM and waits for the process to exit.
func (s *server) terminate() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
	}
}

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
	servers := []*server{{label: "ours", bin: *ours}, {label: "upstream " + upstreamVersion, bin: *upstream}}
	results := map[string][]result{}
	rss := map[string]int64{}
	for _, s := range servers {
		err := s.start()
		if err == nil {
			err = s.waitHealthy(20 * time.Second)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			s.stop()
			os.Exit(1)
		}
		for _, w := range workloads {
			r, err := run([]string{s.client}, *conns, *clients, w.total, *limit, w.op)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				s.stop()
				os.Exit(1)
			}
			fmt.Printf("%-12s %-34s %8d ops %6d errors %10.0f ops/s  p50 %-10v p99 %v\n", s.label, w.name, r.ops, r.errors, r.rate(), r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond))
			results[s.label] = append(results[s.label], r)
		}
		rss[s.label] = s.peakRSS()
		s.stop()
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# Performance\n\n")
	fmt.Fprintf(&b, "Measured by `make bench` on %s: one member each, %d clients over %d gRPC connections, loopback,\n", time.Now().UTC().Format("2006-01-02"), *clients, *conns)
	fmt.Fprintf(&b, "%d CPUs, %s/%s, %s. Both servers run with the same flags, one after the other, in the same run.\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "Command: `go run ./cmd/bench --ours %s --upstream <etcd %s built from the Go module proxy> --clients %d --conns %d --scale %d`\n\n", *ours, upstreamVersion, *clients, *conns, *scale)
	fmt.Fprintf(&b, "| workload | ops | ours ops/s | upstream ops/s | ours p50 | upstream p50 | ours p99 | upstream p99 | errors (ours/upstream) |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	up := servers[1].label
	for i, w := range workloads {
		o, u := results["ours"][i], results[up][i]
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %v | %v | %v | %v | %d/%d |\n", w.name, o.ops, o.rate(), u.rate(),
			o.p50.Round(time.Microsecond), u.p50.Round(time.Microsecond), o.p99.Round(time.Microsecond), u.p99.Round(time.Microsecond), o.errors, u.errors)
	}
	fmt.Fprintf(&b, "\nPeak resident memory (VmHWM) after all workloads: ours %.1f MiB, upstream %.1f MiB.\n",
		float64(rss["ours"])/(1<<20), float64(rss[up])/(1<<20))
	fmt.Fprintf(&b, "\nThe figures are from a shared 2-core machine and move by tens of percent between runs; compare the two columns of one run, not runs with each other.\n")
	if !*skipCluster {
		var rows []clusterResult
		for _, s := range servers {
			r, err := benchCluster(s.label, s.bin, *clients, *conns, *scale, *limit, *catchupBytes)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(1)
			}
			rows = append(rows, r)
		}
		writeClusterReport(&b, rows, *catchupBytes)
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
