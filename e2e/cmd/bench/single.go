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
	// oneCPU: the onecpu part runs it too (the writes, whose throughput on a one-CPU member
	// issue 34 sets a target for)
	oneCPU bool
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
		{name: "put (256 B values, unique keys)", total: keys, oneCPU: true, op: func(ctx context.Context, c *clientv3.Client, i int) error {
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
		{name: "txn (compare version, put)", total: 10000 * scale, oneCPU: true, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			k := fmt.Sprintf("txn/%08d", i)
			_, err := c.Txn(ctx).If(clientv3.Compare(clientv3.Version(k), "=", 0)).Then(clientv3.OpPut(k, val)).Commit()
			return err
		}},
	}
}

// benchSingle starts one fresh member of each implementation and runs each workload on one, then
// at once on the other, so that the two figures of a pair are seconds apart, not minutes (the
// machine's speed drifts over minutes). Which goes first alternates from workload to workload and
// (through the order of subs) from round to round. Then it reads each member's peak memory.
// With profDir set it saves each member's CPU profile of each workload there.
func benchSingle(subs []subject, o options, profDir string) (map[string]sample, error) {
	servers, smps, stop, err := startSideBySide(subs, o, profDir != "")
	defer stop()
	if err != nil {
		return smps, err
	}
	err = runPairs(servers, smps, singleWorkloads(o.scale), o, profDir, func(s *server, _ result, _ costs) {
		peak, now := s.memory()
		fmt.Printf("%-12s %-40s resident %.0f MiB, peak %.0f MiB\n", s.label, "", float64(now)/(1<<20), float64(peak)/(1<<20))
	})
	if err != nil {
		return smps, err
	}
	for _, s := range servers {
		peak, _ := s.memory()
		smps[s.label].values[figPeakRSS] = float64(peak)
	}
	return smps, nil
}

// runPairs runs each workload on one of servers (one member each, side by side), then at once
// on the other, in pairOrder, and records the results in smps; after gets each member's result
// and what it spent besides CPU time.
func runPairs(servers []*server, smps map[string]sample, ws []workload, o options, profDir string, after func(*server, result, costs)) error {
	for wi, w := range ws {
		for _, i := range pairOrder(len(servers), wi) {
			s := servers[i]
			spent := countCosts(s)
			r, err := measure(s.label, []*server{s}, w, o, profDir)
			if err != nil {
				return err
			}
			after(s, r, spent.since())
			smps[s.label].results[w.name] = r
		}
	}
	return nil
}

// startSideBySide starts one fresh member of each implementation, side by side, for the
// throughput parts, with an empty sample each; stop stops those that started (call it even on
// an error).
func startSideBySide(subs []subject, o options, pprof bool) (servers []*server, smps map[string]sample, stop func(), err error) {
	smps = map[string]sample{}
	stop = func() {
		for _, s := range servers {
			s.stop()
		}
	}
	for _, sub := range subs {
		s, err := startThroughputServer(sub.label, sub.bin, o, pprof)
		if err != nil {
			return servers, smps, stop, err
		}
		servers = append(servers, s)
		smps[sub.label] = newSample()
	}
	return servers, smps, stop, nil
}

// pairOrder is the order in which the n implementations run workload number w: as given for
// even w, reversed for odd, so that neither always runs right after the other's load.
func pairOrder(n, w int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
		if w%2 == 1 {
			order[i] = n - 1 - i
		}
	}
	return order
}

// measure runs workload w against members ss (the clients spread over them) and records the
// members' CPU time. With profDir set it saves each member's CPU profile of it there.
func measure(label string, ss []*server, w workload, o options, profDir string) (result, error) {
	clients, conns := o.clients, o.conns
	if w.clients > 0 {
		clients, conns = w.clients, w.conns
	}
	var waits []func()
	if profDir != "" {
		for _, s := range ss {
			base := filepath.Join(profDir, fileName(label+"-"+s.Name+"-"+w.name))
			waits = append(waits, s.profile(base+".cpu.pprof", o.profileFor))
			if o.pinCPU >= 0 {
				// A one-CPU member: the trace shows what its goroutines wait for (go tool trace).
				waits = append(waits, s.trace(base+".trace", o.profileFor))
			}
		}
	}
	cpu0 := cpuTimes(ss)
	r, err := run(endpoints(ss), conns, clients, w.total, o.limit, w.op)
	r.cpu = cpuTimes(ss) - cpu0
	for _, wait := range waits {
		wait()
	}
	if err != nil {
		return r, fmt.Errorf("%s, %s: %w", label, w.name, err)
	}
	printResult(label, w.name, r)
	return r, nil
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
	traceFor              time.Duration
	catchupBytes          int64
	keys                  int // keys of the memory and compaction figures
	watchers, events      int
	defragBytes           int64 // the database the defrag part fills, half of it then freed
	bigReadObjects        int   // 10 KiB objects the big-read part reads back
	startupKeys           int   // keys of the start-up part's data dir
	startupBytes          int64 // their size in all
	// the open-loop part's offered rates (requests per second) and how long each is offered
	offeredPut, offeredTxn, offeredGet, offeredSerializable     int
	offered3Put, offered3Txn, offered3Get, offered3Serializable int // the same offered to three members
	offeredFor                                                  time.Duration
	// pinCPU, when not negative, is the one CPU the single and open-loop parts' members run on
	// (the bench's clients then run on the others)
	pinCPU int
}
