package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// offeredWorkload is one open-loop figure: requests sent at a fixed rate whatever the answers.
type offeredWorkload struct {
	name string
	rate int // requests per second offered
	op   op
}

// offeredWorkloads are the open-loop figures, at rates both implementations sustain on this
// machine (about 70% of upstream's closed-loop throughput in the single part); the reads find
// the keys the put workload wrote.
func offeredWorkloads(o options) []offeredWorkload {
	return offeredAt("", o.offeredPut, o.offeredTxn, o.offeredGet, o.offeredSerializable)
}

// offered3Workloads are the same requests offered to three-member clusters, at their own rates
// (about 70% of upstream's three-member closed-loop throughput), named apart.
func offered3Workloads(o options) []offeredWorkload {
	return offeredAt("3 members, ", o.offered3Put, o.offered3Txn, o.offered3Get, o.offered3Serializable)
}

// offeredAt is the four open-loop workloads at these rates, their names starting with prefix.
func offeredAt(prefix string, put, txn, get, serializable int) []offeredWorkload {
	val := strings.Repeat("v", 256)
	const keys = 20000
	key := func(i int) string { return fmt.Sprintf("offered/%08d", i%keys) }
	return []offeredWorkload{
		{name: prefix + "put (256 B values)", rate: put, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Put(ctx, key(i), val)
			return err
		}},
		{name: prefix + "txn (compare version, put)", rate: txn, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			k := fmt.Sprintf("offered-txn/%09d", i)
			_, err := c.Txn(ctx).If(clientv3.Compare(clientv3.Version(k), "=", 0)).Then(clientv3.OpPut(k, val)).Commit()
			return err
		}},
		{name: prefix + "range, linearizable (1 key)", rate: get, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Get(ctx, key(i))
			return err
		}},
		{name: prefix + "range, serializable (1 key)", rate: serializable, op: func(ctx context.Context, c *clientv3.Client, i int) error {
			_, err := c.Get(ctx, key(i), clientv3.WithSerializable())
			return err
		}},
	}
}

// offeredName is the name a workload's figures are kept under.
func offeredName(w offeredWorkload) string {
	return fmt.Sprintf("open loop %d/s: %s", w.rate, w.name)
}

// benchOffered starts one fresh member of each implementation and offers each workload to one,
// then to the other (the first alternating as in the single part), for o.offeredFor each: the
// server CPU time per request at the same offered load, and the latency at that load. With
// profDir set it saves each member's CPU profile of each rate there.
func benchOffered(subs []subject, o options, profDir string) (map[string]sample, error) {
	servers, smps, stop, err := startSideBySide(subs, o, profDir != "")
	defer stop()
	if err != nil {
		return smps, err
	}
	for wi, w := range offeredWorkloads(o) {
		for _, i := range pairOrder(len(subs), wi) {
			s := servers[i]
			wait := func() {}
			if profDir != "" {
				// The CPU per request at the same offered load is the figure: where it goes.
				wait = s.observe(filepath.Join(profDir, fileName(s.label+"-"+s.Name+"-"+offeredName(w))), o)
			}
			cpu0 := s.cpuTime()
			spent := countCosts(s)
			r, err := offer([]string{s.ClientURL}, o.conns, o.clients, w.rate, o.offeredFor, w.op)
			r.cpu = s.cpuTime() - cpu0
			spent = spent.since()
			wait()
			if err != nil {
				return smps, fmt.Errorf("%s, %s: %w", s.label, offeredName(w), err)
			}
			printResult(s.label, offeredName(w), r)
			spent.print(s.label, r.ops)
			smps[s.label].results[offeredName(w)] = r
		}
	}
	return smps, nil
}

// benchOffered3 is benchOffered on a fresh three-member cluster of each implementation (both
// running side by side, the idle one ticking), the clients spread over the members: the CPU
// per request is all three members', so the peer path (replication to the followers, their
// applies) counts with the leader's work.
func benchOffered3(subs []subject, o options, profDir string) (map[string]sample, error) {
	clusters, smps, stop, err := startClusters(subs, profDir != "")
	defer stop()
	if err != nil {
		return smps, err
	}
	for wi, w := range offered3Workloads(o) {
		for _, i := range pairOrder(len(subs), wi) {
			ss, label := clusters[i], subs[i].label
			var waits []func()
			if profDir != "" {
				for _, s := range ss {
					waits = append(waits, s.observe(filepath.Join(profDir, fileName(label+"-"+s.Name+"-"+offeredName(w))), o))
				}
			}
			cpu0 := cpuTimes(ss)
			spent := make([]costs, len(ss))
			for m, s := range ss {
				spent[m] = countCosts(s)
			}
			r, err := offer(endpoints(ss), o.conns, o.clients, w.rate, o.offeredFor, w.op)
			r.cpu = cpuTimes(ss) - cpu0
			for m := range spent {
				spent[m] = spent[m].since()
			}
			for _, wait := range waits {
				wait()
			}
			if err != nil {
				return smps, fmt.Errorf("%s, %s: %w", label, offeredName(w), err)
			}
			printResult(label, offeredName(w), r)
			// Each member's share: the leader's and the followers' fsyncs and system calls
			// per request differ, and the peer path shows in both.
			for m, s := range ss {
				spent[m].print(label+" "+s.Name, r.ops)
			}
			smps[label].results[offeredName(w)] = r
		}
	}
	return smps, nil
}

// offer sends requests at rate per second for d, each by the next free one of clients workers
// over conns connections. A request's latency runs from when it was due, not from when a worker
// took it, so a server that falls behind shows it in the latency instead of slowing the offer
// (no coordinated omission). Requests due within d are all sent; the result's elapsed time
// includes any that were still queued when d ended.
func offer(endpoints []string, conns, clients, rate int, d time.Duration, o op) (result, error) {
	cs, closeAll, err := newClients(endpoints, conns)
	if err != nil {
		return result{}, err
	}
	defer closeAll()
	due := make(chan time.Time, rate*int(d/time.Second+1))
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs int
		wg   sync.WaitGroup
		seq  sync.Mutex
		next int
	)
	start := time.Now()
	cpu0 := selfCPU()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := cs[w%conns]
			var local []time.Duration
			lerr := 0
			for at := range due {
				seq.Lock()
				i := next
				next++
				seq.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := o(ctx, c, i)
				cancel()
				if err != nil {
					lerr++
					continue
				}
				local = append(local, time.Since(at))
			}
			mu.Lock()
			lat = append(lat, local...)
			errs += lerr
			mu.Unlock()
		}(w)
	}
	// Requests fall due evenly: one every 1/rate s, released by a 1 ms ticker in batches.
	interval := time.Second / time.Duration(rate)
	tick := time.NewTicker(time.Millisecond)
	sent := 0
	for now := range tick.C {
		if now.Sub(start) >= d {
			break
		}
		for ; sent < rate*int(d/time.Second) && start.Add(time.Duration(sent)*interval).Before(now); sent++ {
			due <- start.Add(time.Duration(sent) * interval)
		}
	}
	tick.Stop()
	close(due)
	wg.Wait()
	r := summarize(lat)
	r.errors, r.elapsed, r.clientCPU = errs, time.Since(start), selfCPU()-cpu0
	return r, nil
}

// syscallCounts are a process's read and write system calls so far (/proc/PID/io).
// costs are what a member spent on a workload besides CPU time: WAL fsyncs, and read and write
// system calls.
type costs struct {
	s      *server
	fsyncs int64
	calls  syscallCounts
}

// countCosts starts counting s's costs; since then gives those from there to now.
func countCosts(s *server) costs { return costs{s: s, fsyncs: s.walFsyncs(), calls: s.syscalls()} }

func (c costs) since() costs {
	return costs{s: c.s, fsyncs: c.s.walFsyncs() - c.fsyncs, calls: c.s.syscalls().less(c.calls)}
}

// print prints the costs (from since) per request of ops.
func (c costs) print(label string, ops int) {
	if ops > 0 && c.fsyncs > 0 {
		// How many requests share a WAL fsync: fewer per fsync, more fsync CPU per request.
		fmt.Printf("%-12s %-40s %d WAL fsyncs, %.1f requests per fsync\n", label, "", c.fsyncs, float64(ops)/float64(c.fsyncs))
	}
	if ops > 0 && c.calls.reads+c.calls.writes > 0 {
		// Socket and file calls alike: the kernel's share of a request's CPU time, and (each
		// socket write a read for the client) of the client's.
		fmt.Printf("%-12s %-40s %.2f read and %.2f write system calls per request (%s and %s each)\n", label, "",
			float64(c.calls.reads)/float64(ops), float64(c.calls.writes)/float64(ops),
			perCall(c.calls.readBytes, c.calls.reads), perCall(c.calls.writeBytes, c.calls.writes))
	}
}

// syscallCounts are a process's read and write system calls and the bytes they moved (sockets
// and files alike, as /proc/PID/io counts them).
type syscallCounts struct{ reads, writes, readBytes, writeBytes int64 }

func (c syscallCounts) less(d syscallCounts) syscallCounts {
	return syscallCounts{c.reads - d.reads, c.writes - d.writes, c.readBytes - d.readBytes, c.writeBytes - d.writeBytes}
}

// perCall is the bytes per call, as "N B".
func perCall(bytes, calls int64) string {
	if calls <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d B", bytes/calls)
}

// syscalls reads the member's counts; zero when they cannot be read.
func (s *server) syscalls() syscallCounts {
	var c syscallCounts
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", s.Pid()))
	if err != nil {
		return c
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			c.reads, _ = strconv.ParseInt(v, 10, 64)
		} else if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			c.writes, _ = strconv.ParseInt(v, 10, 64)
		} else if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			c.readBytes, _ = strconv.ParseInt(v, 10, 64)
		} else if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			c.writeBytes, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return c
}

// walFsyncs is the member's count of WAL fsyncs so far (etcd_disk_wal_fsync_duration_seconds,
// upstream's metric and ours); 0 when it cannot be read.
func (s *server) walFsyncs() int64 {
	return int64(s.metrics("etcd_disk_wal_fsync_duration_seconds_count")[0])
}

// metrics reads the member's /metrics once and returns the value of each series named (name
// and labels as exposed, e.g. `x_bucket{le="0.128"}`), 0 for those it does not expose.
func (s *server) metrics(series ...string) []float64 {
	vals := make([]float64, len(series))
	resp, err := http.Get(s.ClientURL + "/metrics")
	if err != nil {
		return vals
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		for i, name := range series {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				vals[i], _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return vals
}
