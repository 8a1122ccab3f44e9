package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

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
// its InitialCluster says otherwise. pprof serves /debug/pprof/ on the client URL.
func newServer(label, bin, name string, pprof bool) (*server, error) {
	dir, err := os.MkdirTemp("", "bench-"+strings.ReplaceAll(label, " ", "-")+"-")
	if err != nil {
		return nil, err
	}
	m := &cluster.Member{Name: name, Bin: bin, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "server.log"),
		State: "new", LogLevel: "error"}
	if pprof {
		m.Extra = []string{"--enable-pprof"}
	}
	if m.ClientURL, err = cluster.FreeURL(); err == nil {
		m.PeerURL, err = cluster.FreeURL()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &server{Member: m, label: label, dir: dir}, nil
}

// startServer starts a lone member and waits until it is healthy.
func startServer(label, bin string, pprof bool) (*server, error) {
	return startServerWith(label, bin, pprof, nil)
}

// startThroughputServer is startServer for the throughput parts: with --pin-member-cpu the
// member runs with GOMAXPROCS=1 and every thread of it pinned to that CPU (a member limited to
// one CPU, as in a container with a one-CPU limit).
func startThroughputServer(label, bin string, o options, pprof bool) (*server, error) {
	if o.pinCPU < 0 {
		return startServer(label, bin, pprof)
	}
	s, err := startServerWith(label, bin, pprof, []string{"GOMAXPROCS=1"})
	if err != nil {
		return nil, err
	}
	if err := pin(s.Pid(), fmt.Sprint(o.pinCPU)); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// pin sets the CPU affinity of every thread of process pid to cpus (taskset's list syntax).
// Threads started later inherit it.
func pin(pid int, cpus string) error {
	if out, err := exec.Command("taskset", "-a", "-p", "-c", cpus, fmt.Sprint(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("taskset %s %d: %v: %s", cpus, pid, err, out)
	}
	return nil
}

// startServerWith is startServer with environment variables (NAME=VALUE) and extra flags.
func startServerWith(label, bin string, pprof bool, env []string, extra ...string) (*server, error) {
	s, err := newServer(label, bin, "b1", pprof)
	if err != nil {
		return nil, err
	}
	s.Env = append(s.Env, env...)
	s.Extra = append(s.Extra, extra...)
	if err = s.Start(); err == nil {
		err = s.waitHealthy(20 * time.Second)
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) waitHealthy(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.WaitHealthy(ctx); err != nil {
		return fmt.Errorf("%s %s did not become healthy (log in %s): %w", s.label, s.Name, s.dir, err)
	}
	return nil
}

// memory is the process's resident set size in bytes: the high-water mark (VmHWM) and now (VmRSS).
func (s *server) memory() (peak, now int64) {
	f := s.status()
	return f("VmHWM"), f("VmRSS")
}

// residentParts splits the resident set now: anonymous memory (the heap, stacks) and pages of
// mapped files (the database's memory map).
func (s *server) residentParts() (anon, file int64) {
	f := s.status()
	return f("RssAnon"), f("RssFile")
}

// status reads /proc/PID/status once and returns a reader of its kB fields, in bytes (0 when absent).
func (s *server) status() func(name string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Pid()))
	if err != nil {
		return func(string) int64 { return 0 }
	}
	return func(name string) int64 {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, name+":") {
				f := strings.Fields(line)
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024
			}
		}
		return 0
	}
}

// cpuTime is the CPU time (user and system) the process has used so far.
func (s *server) cpuTime() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Pid()))
	if err != nil {
		return 0
	}
	// The fields after the command (which may hold spaces) start after its closing parenthesis;
	// utime and stime are the 14th and 15th fields, in clock ticks (100 per second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// cpuTimes is the CPU time of all of ss so far.
func cpuTimes(ss []*server) time.Duration {
	var t time.Duration
	for _, s := range ss {
		t += s.cpuTime()
	}
	return t
}

// profile saves the member's CPU profile over the next d to path (the member runs with
// --enable-pprof); it returns at once and the returned function waits for the file.
func (s *server) profile(path string, d time.Duration) func() { return s.record("profile", path, d) }

// allocs is profile for what the member allocates in d (a delta of the allocation profile).
func (s *server) allocs(path string, d time.Duration) func() { return s.record("allocs", path, d) }

// heap saves what the member holds now (the in-use heap, after a collection): what its
// collector has to mark every cycle.
func (s *server) heap(path string) func() { return s.record("heap", path, 0) }

// trace is profile for a Go execution trace (go tool trace), which shows what each goroutine
// waited for.
func (s *server) trace(path string, d time.Duration) func() { return s.record("trace", path, d) }

// observe takes the member's CPU profile (base.cpu.pprof) and, with o.traceFor set, its
// execution trace (base.trace) at once; the returned func waits for both.
func (s *server) observe(base string, o options) func() {
	prof := s.profile(base+".cpu.pprof", o.profileFor)
	if o.traceFor <= 0 {
		return prof
	}
	tr := s.trace(base+".trace", o.traceFor)
	return func() { prof(); tr() }
}

func (s *server) record(kind, path string, d time.Duration) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", s.ClientURL, kind, int(d.Seconds()))
		if d == 0 { // a snapshot, not a delta
			url = fmt.Sprintf("%s/debug/pprof/%s?gc=1", s.ClientURL, kind)
		}
		resp, err := http.Get(url)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", kind, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", kind, err)
			return
		}
		defer f.Close()
		io.Copy(f, resp.Body)
	}()
	return func() { <-done }
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
	max      time.Duration
	// cpu is the CPU time the server processes used during the workload.
	cpu time.Duration
	// clientCPU is the CPU time this process (the load generator) used during the workload.
	clientCPU time.Duration
}

// clientCPUPerOp is the load generator's CPU time per successful operation.
func (r result) clientCPUPerOp() time.Duration {
	if r.ops == 0 {
		return 0
	}
	return r.clientCPU / time.Duration(r.ops)
}

// selfCPU is the CPU time (user and system) this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerOp is the servers' CPU time per successful operation.
func (r result) cpuPerOp() time.Duration {
	if r.ops == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.ops)
}

func (r result) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

type op func(ctx context.Context, c *clientv3.Client, i int) error

func newClients(endpoints []string, n int) ([]*clientv3.Client, func(), error) {
	cs := make([]*clientv3.Client, 0, n)
	closeAll := func() {
		for _, c := range cs {
			c.Close()
		}
	}
	for i := 0; i < n; i++ {
		c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
			MaxCallSendMsgSize: 16 << 20})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cs = append(cs, c)
	}
	return cs, closeAll, nil
}

// run executes total operations spread over clients goroutines sharing conns connections, and
// stops early at the time limit.
func run(endpoints []string, conns, clients, total int, limit time.Duration, o op) (result, error) {
	cs, closeAll, err := newClients(endpoints, conns)
	if err != nil {
		return result{}, err
	}
	defer closeAll()
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
	cpu0 := selfCPU()
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
				err := o(octx, c, i)
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
	r := summarize(lat)
	r.errors, r.elapsed, r.clientCPU = errs, time.Since(start), selfCPU()-cpu0
	return r, nil
}

// steady runs workers goroutines that each send requests one after another until stop closes;
// record hears every request's start, end and error, one at a time. The returned function
// waits for the workers after stop has closed.
func steady(workers int, timeout time.Duration, stop <-chan struct{}, req func(ctx context.Context, w, i int) error, record func(start, end time.Time, err error)) (wait func()) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				err := req(ctx, w, i)
				cancel()
				end := time.Now()
				mu.Lock()
				record(t0, end, err)
				mu.Unlock()
			}
		}(w)
	}
	return wg.Wait
}

// summarize sorts latencies and reads their count, median, 99th percentile and maximum.
func summarize(lat []time.Duration) result {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r := result{ops: len(lat)}
	if len(lat) > 0 {
		r.p50, r.p99, r.max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return r
}

// load writes n keys fmt.Sprintf(format, i) with value val in transactions of up to 100 puts
// (upstream's --max-txn-ops is 128), over 8 connections.
func load(endpoints []string, format string, n int, val string) error {
	return loadIn(endpoints, format, n, val, 100)
}

// loadIn is load in transactions of per puts.
func loadIn(endpoints []string, format string, n int, val string, per int) error {
	batches := (n + per - 1) / per
	r, err := run(endpoints, 8, 16, batches, 30*time.Minute, func(ctx context.Context, c *clientv3.Client, b int) error {
		ops := make([]clientv3.Op, 0, per)
		for i := b * per; i < (b+1)*per && i < n; i++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf(format, i), val))
		}
		_, err := c.Txn(ctx).Then(ops...).Commit()
		return err
	})
	if err == nil && r.errors > 0 {
		err = fmt.Errorf("loading %d keys: %d of %d transactions failed", n, r.errors, batches)
	}
	return err
}
