package commands

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"

	"etcdx/etcdctl/cli"
)

// perfLoad is one of upstream's check perf workload models: a target write rate, the clients
// sharing it, and how long it runs.
type perfLoad struct {
	limit, clients int
}

var perfLoads = map[string]perfLoad{
	"s": {150, 50}, "m": {1000, 200}, "l": {8000, 500}, "xl": {15000, 1000},
}

var perfLoadAliases = map[string]string{
	"s": "s", "small": "s", "m": "m", "medium": "m", "l": "l", "large": "l", "xl": "xl", "xLarge": "xl",
}

// perfStats summarises the write latencies of a run.
type perfStats struct {
	errs                      map[string]int
	rps, slowest, mean, stdev float64 // seconds
}

func summarise(lats []time.Duration, errs map[string]int, elapsed time.Duration) perfStats {
	s := perfStats{errs: errs}
	if len(lats) == 0 || elapsed <= 0 {
		return s
	}
	s.rps = float64(len(lats)) / elapsed.Seconds()
	var sum float64
	for _, l := range lats {
		sum += l.Seconds()
		s.slowest = math.Max(s.slowest, l.Seconds())
	}
	s.mean = sum / float64(len(lats))
	var sq float64
	for _, l := range lats {
		d := l.Seconds() - s.mean
		sq += d * d
	}
	s.stdev = math.Sqrt(sq / float64(len(lats)))
	return s
}

func checkCommand(g *global) *cli.Command {
	var (
		load, prefix          string
		autoCompact, autoDefr bool
		duration              time.Duration
	)
	perf := &cli.Command{Name: "perf", Args: "[options]", Short: "Check the performance of the etcd cluster",
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&load, "load", "s", "The performance check's workload model. Accepted workloads: s(small), m(medium), l(large), xl(xLarge)"+
				sinceLevel(g, "3.6", ". Different workload models use different configurations in terms of number of clients and expected throughput."))
			fs.StringVar(&prefix, "prefix", "/etcdctl-check-perf/", "The prefix for writing the performance check's keys.")
			fs.BoolVar(&autoCompact, "auto-compact", false, "Compact storage with last revision after test is finished.")
			fs.BoolVar(&autoDefr, "auto-defrag", false, "Defragment storage after test is finished.")
			// Ours only (upstream's check always writes for a minute), so hidden from the help
			// that is upstream's.
			fs.DurationVar(&duration, "duration", time.Minute, "How long the check writes")
			_ = fs.MarkHidden("duration")
		},
		Run: run(g, func(e *env) error {
			model, ok := perfLoadAliases[load]
			if !ok {
				return &cli.Error{Code: cli.ExitBadFeature, Err: fmt.Errorf("unknown load option %v", load)}
			}
			if duration <= 0 {
				return cli.BadArgs("--duration must be positive, got %v", duration)
			}
			return e.checkPerf(perfLoads[model], prefix, duration, autoCompact, autoDefr)
		}),
	}
	var dsLoad, dsPrefix string
	var dsCompact, dsDefrag bool
	datascale := &cli.Command{Name: "datascale", Args: "[options]", Short: "Check the memory usage of holding data for different workloads on a given server endpoint.",
		Long: "If no endpoint is provided, localhost will be used. If multiple endpoints are provided, first endpoint will be used.",
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&dsLoad, "load", "s", "The datascale check's workload model. Accepted workloads: s(small), m(medium), l(large), xl(xLarge)")
			fs.StringVar(&dsPrefix, "prefix", "/etcdctl-check-datascale/", "The prefix for writing the datascale check's keys.")
			fs.BoolVar(&dsCompact, "auto-compact", false, "Compact storage with last revision after test is finished.")
			fs.BoolVar(&dsDefrag, "auto-defrag", false, "Defragment storage after test is finished.")
		},
		Run: run(g, func(e *env) error {
			model, ok := perfLoadAliases[dsLoad]
			if !ok {
				return &cli.Error{Code: cli.ExitBadFeature, Err: fmt.Errorf("unknown load option %v", dsLoad)}
			}
			return e.checkDatascale(datascaleLoads[model], dsPrefix, dsCompact, dsDefrag)
		}),
	}
	return &cli.Command{Name: "check", Args: "<subcommand>", Short: "commands for checking properties of the etcd cluster", Subs: []*cli.Command{perf, datascale}}
}

func (e *env) checkPerf(cfg perfLoad, prefix string, duration time.Duration, autoCompact, autoDefrag bool) error {
	clients, closeAll, err := e.newClients(cfg.clients)
	if err != nil {
		return err
	}
	defer closeAll()
	ctx, stop := untilSignal()
	defer stop()
	if err := e.ensureEmptyPrefix(clients[0], prefix); err != nil {
		return err
	}

	runCtx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	ops := make(chan clientv3.Op, cfg.clients)
	start := time.Now()
	wait := runWorkers(clients, ops)
	go e.progress(runCtx, start, duration)
	// Keys as upstream: a 256-byte random varint after the prefix; values of 1 KiB.
	limiter := rate.NewLimiter(rate.Limit(cfg.limit), 1)
	key, value := make([]byte, 256), string(make([]byte, 1024))
	for limiter.Wait(runCtx) == nil {
		binary.PutVarint(key, rand.Int64N(math.MaxInt64))
		ops <- clientv3.OpPut(prefix+string(key), value)
	}
	close(ops)
	lats, errs := wait()
	s := summarise(lats, errs, time.Since(start))

	if err := e.cleanupPerf(clients[0], prefix, autoCompact, autoDefrag); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return &cli.Error{Code: cli.ExitInterrupted, Err: fmt.Errorf("check perf interrupted")}
	}
	return e.judgePerf(s, cfg)
}

// ensureEmptyPrefix refuses to run a check over keys someone else owns.
func (e *env) ensureEmptyPrefix(c *clientv3.Client, prefix string) error {
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithLimit(1))
	if err != nil {
		return err
	}
	if len(resp.Kvs) > 0 {
		return &cli.Error{Code: cli.ExitInvalidData, Err: fmt.Errorf("prefix %q has keys. Delete with 'etcdctl del --prefix %s' first", prefix, prefix)}
	}
	return nil
}

// newClients makes n clients of --endpoints; close them with the returned func.
func (e *env) newClients(n int) ([]*clientv3.Client, func(), error) {
	clients := make([]*clientv3.Client, 0, n)
	closeAll := func() {
		for _, c := range clients {
			c.Close()
		}
	}
	for i := 0; i < n; i++ {
		c, err := e.newClient(e.g.endpoints)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		clients = append(clients, c)
	}
	return clients, closeAll, nil
}

// runWorkers has each client send operations from ops until it closes; wait returns the
// latencies of those that succeeded and the count of each error.
func runWorkers(clients []*clientv3.Client, ops <-chan clientv3.Op) (wait func() ([]time.Duration, map[string]int)) {
	var (
		mu   sync.Mutex
		lats []time.Duration
		errs = map[string]int{}
		wg   sync.WaitGroup
	)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := range ops {
				t := time.Now()
				_, err := c.Do(context.Background(), op)
				d := time.Since(t)
				mu.Lock()
				if err != nil {
					errs[err.Error()]++
				} else {
					lats = append(lats, d)
				}
				mu.Unlock()
			}
		}()
	}
	return func() ([]time.Duration, map[string]int) {
		wg.Wait()
		return lats, errs
	}
}

// judgePerf prints upstream's verdict lines: throughput within 90% of the target, no request
// slower than 500ms, a standard deviation under 100ms, and no errors.
func (e *env) judgePerf(s perfStats, cfg perfLoad) error {
	ok := true
	if len(s.errs) > 0 {
		e.out.Println("FAIL: too many errors")
		msgs := make([]string, 0, len(s.errs))
		for m := range s.errs {
			msgs = append(msgs, m)
		}
		sort.Strings(msgs)
		for _, m := range msgs {
			e.out.Printf("FAIL: ERROR(%v) -> %d\n", m, s.errs[m])
		}
		ok = false
	}
	if s.rps/float64(cfg.limit) <= 0.9 {
		e.out.Printf("FAIL: Throughput too low: %d writes/s\n", int(s.rps)+1)
		ok = false
	} else {
		e.out.Printf("PASS: Throughput is %d writes/s\n", int(s.rps)+1)
	}
	if s.slowest > 0.5 {
		e.out.Printf("Slowest request took too long: %fs\n", s.slowest)
		ok = false
	} else {
		e.out.Printf("PASS: Slowest request took %fs\n", s.slowest)
	}
	if s.stdev > 0.1 {
		e.out.Printf("Stddev too high: %fs\n", s.stdev)
		ok = false
	} else {
		e.out.Printf("PASS: Stddev is %fs\n", s.stdev)
	}
	if !ok {
		e.out.Println("FAIL")
		return &cli.Error{Code: cli.ExitError, Err: fmt.Errorf("the cluster failed the performance check")}
	}
	e.out.Println("PASS")
	return nil
}

// cleanupPerf deletes the check's keys, then compacts them away and defragments the members when
// asked, printing upstream's progress lines.
func (e *env) cleanupPerf(c *clientv3.Client, prefix string, compact, defrag bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Delete(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		e.out.Printf("FAIL: Cleanup failed during key deletion: ERROR(%v)\n", err)
		return nil
	}
	if compact {
		rev := resp.Header.Revision
		e.out.Printf("Compacting with revision %d\n", rev)
		if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
			return err
		}
		e.out.Printf("Compacted with revision %d\n", rev)
	}
	if defrag {
		for _, ep := range c.Endpoints() {
			e.out.Printf("Defragmenting %q\n", ep)
			if _, err := c.Defragment(ctx, ep); err != nil {
				return err
			}
			e.out.Printf("Defragmented %q\n", ep)
		}
	}
	return nil
}

// progress draws a bar on a terminal's stderr while the check runs; nothing when redirected.
func (e *env) progress(ctx context.Context, start time.Time, total time.Duration) {
	f, ok := terminal(e.Stderr)
	if !ok {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		frac := math.Min(1, float64(time.Since(start))/float64(total))
		n := int(frac * 40)
		fmt.Fprintf(f, "\r[%s%s] %3.0f%%", strings.Repeat("=", n), strings.Repeat(" ", 40-n), frac*100)
		select {
		case <-ctx.Done():
			fmt.Fprintln(f)
			return
		case <-tick.C:
		}
	}
}
