package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// workload is one figure of the throughput tables: total operations by clients goroutines over
// conns connections (0: the run's defaults).
type workload struct {
	name           string
	total          int
	clients, conns int
	op             op
}

// singleWorkloads are run in order on one fresh member; the reads find the puts' keys.
func singleWorkloads(scale int) []workload {
	val := strings.Repeat("v", 256)
	keys := 20000 * scale
	key := func(i int) string { return fmt.Sprintf("bench/%08d", i%keys) }
	rangeOf := func(i, n int) (string, string) {
		from := (i * n) % (keys - n)
		return key(from), key(from + n)
	}
	return []workload{
		{name: "put (256 B values, unique keys)", total: keys, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Put(ctx, key(i), val)
			return err
		}},
		{name: "put, one client (fsync-bound)", total: 1000 * scale, clients: 1, conns: 1, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Put(ctx, fmt.Sprintf("one/%08d", i), val)
			return err
		}},
		{name: "range, linearizable (1 key)", total: 40000 * scale, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Get(ctx, key(i))
			return err
		}},
		{name: "range, serializable (1 key)", total: 40000 * scale, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Get(ctx, key(i), clientv3.WithSerializable())
			return err
		}},
		{name: "range, 100 keys per request", total: 5000 * scale, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			from, to := rangeOf(i, 100)
			_, err := c.Get(ctx, from, clientv3.WithRange(to))
			return err
		}},
		{name: "range, 1000 keys per request", total: 1000 * scale, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			from, to := rangeOf(i, 1000)
			_, err := c.Get(ctx, from, clientv3.WithRange(to))
			return err
		}},
		{name: "txn (compare version, put)", total: 10000 * scale, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			k := fmt.Sprintf("txn/%08d", i)
			_, err := c.Txn(ctx).If(clientv3.Compare(clientv3.Version(k), "=", 0)).Then(clientv3.OpPut(k, val)).Commit()
			return err
		}},
	}
}

// benchSingle runs the single-member workloads on a fresh member and reads its peak memory.
// With profDir set it saves the member's CPU profile of each workload there.
func benchSingle(label, bin string, o options, profDir string) (sample, error) {
	smp := newSample()
	s, err := startServer(label, bin, profDir != "")
	if err != nil {
		return smp, err
	}
	defer s.stop()
	for _, w := range singleWorkloads(o.scale) {
		clients, conns := o.clients, o.conns
		if w.clients > 0 {
			clients, conns = w.clients, w.conns
		}
		wait := func() {}
		if profDir != "" {
			wait = s.profile(filepath.Join(profDir, fileName(label+"-"+w.name)+".cpu.pprof"), o.profileFor)
		}
		cpu0 := s.cpuTime()
		r, err := run([]string{s.ClientURL}, conns, clients, w.total, o.limit, w.op)
		r.cpu = s.cpuTime() - cpu0
		wait()
		if err != nil {
			return smp, err
		}
		smp.printResult(label, w.name, r)
		peak, now := s.memory()
		fmt.Printf("%-12s %-40s resident %.0f MiB, peak %.0f MiB\n", label, "", float64(now)/(1<<20), float64(peak)/(1<<20))
		smp.results[w.name] = r
	}
	peak, _ := s.memory()
	smp.values[figPeakRSS] = float64(peak)
	return smp, nil
}

// fileName makes s usable as a file name.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
}

// options are the command line's workload settings.
type options struct {
	clients, conns, scale int
	limit                 time.Duration
	profileFor            time.Duration
	catchupBytes          int64
	keys                  int // keys of the memory and compaction figures
	watchers, events      int
}
