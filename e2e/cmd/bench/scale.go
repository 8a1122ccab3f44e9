package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// benchKeys loads o.keys keys of 256 B on a fresh member and reads the resident memory each key
// costs; then it writes every key again and compacts the first o.keys revisions away under a
// steady load of puts and gets, whose longest request is the compaction's pause. With profDir
// set it saves there an execution trace of the compaction's first 3 s and the requests that
// took slowRequest or longer.
func benchKeys(label, bin string, o options, profDir string) (sample, error) {
	smp := newSample()
	s, err := startServer(label, bin, profDir != "")
	if err != nil {
		return smp, err
	}
	defer s.stop()
	eps := []string{s.ClientURL}
	val := strings.Repeat("m", 256)
	_, before := s.memory()
	if err := load(eps, "mem/%09d", o.keys, val); err != nil {
		return smp, err
	}
	time.Sleep(2 * time.Second) // let the last batch commit and allocations settle
	_, after := s.memory()
	perKey := float64(after-before) / float64(o.keys)
	smp.values[figBytesPerKey] = perKey
	fmt.Printf("%-12s %d keys: resident %.0f MiB -> %.0f MiB, %.0f B per key\n", label, o.keys, float64(before)/(1<<20), float64(after)/(1<<20), perKey)

	if err := load(eps, "mem/%09d", o.keys, val); err != nil {
		return smp, err
	}
	cs, closeAll, err := newClients(eps, 2)
	if err != nil {
		return smp, err
	}
	defer closeAll()
	ctx := context.Background()
	resp, err := cs[0].Get(ctx, "mem/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return smp, err
	}
	// A transaction's puts share one revision, so the revision counts transactions; compacting
	// at the current one removes every key's first version, o.keys entries of the database.
	rev := resp.Header.Revision
	var (
		lat  []time.Duration
		fail int
		// slowestAt is when the slowest request started
		slowestAt time.Time
		slowest   time.Duration
		stop      = make(chan struct{})
		// slow holds the start and end of each request of slowRequest or longer
		slow [][2]time.Time
	)
	wait := steady(8, 30*time.Second, stop, func(ctx context.Context, w, i int) error {
		c := cs[w%len(cs)]
		if i%2 == 0 {
			_, err := c.Put(ctx, fmt.Sprintf("during/%d/%d", w, i), val)
			return err
		}
		_, err := c.Get(ctx, fmt.Sprintf("mem/%09d", (w*7919+i)%o.keys))
		return err
	}, func(start, end time.Time, err error) {
		if err != nil {
			fail++
			return
		}
		d := end.Sub(start)
		lat = append(lat, d)
		if d >= slowRequest {
			slow = append(slow, [2]time.Time{start, end})
		}
		if d > slowest {
			slowest, slowestAt = d, start
		}
	})
	time.Sleep(time.Second)
	traced := func() {}
	if profDir != "" {
		traced = s.trace(filepath.Join(profDir, fileName(label+"-compaction")+".trace"), 3*time.Second)
	}
	compactStart := time.Now()
	_, cerr := cs[1].Compact(ctx, rev, clientv3.WithCompactPhysical())
	took := time.Since(compactStart)
	time.Sleep(time.Second)
	close(stop)
	wait()
	traced()
	if profDir != "" {
		var b strings.Builder
		fmt.Fprintf(&b, "# requests of %v or longer; times from when the compaction was asked for\n", slowRequest)
		for _, r := range slow {
			fmt.Fprintf(&b, "start %v end %v took %v\n", r[0].Sub(compactStart), r[1].Sub(compactStart), r[1].Sub(r[0]))
		}
		if err := os.WriteFile(filepath.Join(profDir, fileName(label+"-compaction-slow")+".txt"), []byte(b.String()), 0o644); err != nil {
			return smp, err
		}
	}
	if cerr != nil {
		return smp, fmt.Errorf("compact: %w", cerr)
	}
	r := summarize(lat)
	r.errors = fail
	smp.values[figCompactPause] = float64(r.max)
	smp.values[figCompactTook] = float64(took)
	fmt.Printf("%-12s compaction of %d superseded versions took %v; longest request meanwhile %v, started %v after the compaction was asked for (p99 %v, %d failed)\n", label, o.keys, took.Round(time.Millisecond), r.max.Round(time.Millisecond), slowestAt.Sub(compactStart).Round(time.Millisecond), r.p99.Round(time.Microsecond), fail)
	if fail > 0 {
		return smp, fmt.Errorf("%d requests failed during the compaction", fail)
	}
	return smp, nil
}

// slowRequest is the latency from which a request during the compaction is listed (with --pprof).
const slowRequest = 30 * time.Millisecond

// benchWatchers opens o.watchers watchers of one prefix on a fresh member, spread over 10
// connections, then puts o.events keys 10 ms apart; each event's delivery latency is from just
// before its put to its arrival at each watcher. With profDir set it saves the member's CPU
// profile of the deliveries there.
func benchWatchers(label, bin string, o options, profDir string) (sample, error) {
	smp := newSample()
	s, err := startServer(label, bin, profDir != "")
	if err != nil {
		return smp, err
	}
	defer s.stop()
	const conns = 10
	cs, closeAll, err := newClients([]string{s.ClientURL}, conns+1)
	if err != nil {
		return smp, err
	}
	defer closeAll()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		created sync.WaitGroup
		done    sync.WaitGroup
		mu      sync.Mutex
		lat     = make([]time.Duration, 0, o.watchers*o.events)
		missed  int
	)
	for i := 0; i < o.watchers; i++ {
		wch := cs[i%conns].Watch(ctx, "watch/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
		created.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			got := make([]time.Duration, 0, o.events)
			first := true
			deadline := time.After(2*time.Minute + time.Duration(o.events)*10*time.Millisecond)
		recv:
			for len(got) < o.events {
				select {
				case wr, ok := <-wch:
					if !ok {
						break recv
					}
					if first && wr.Created {
						first = false
						created.Done()
						continue
					}
					now := time.Now()
					for _, ev := range wr.Events {
						ns, _ := strconv.ParseInt(string(ev.Kv.Value), 10, 64)
						got = append(got, now.Sub(time.Unix(0, ns)))
					}
				case <-deadline:
					break recv
				}
			}
			if first {
				created.Done()
			}
			mu.Lock()
			lat = append(lat, got...)
			missed += o.events - len(got)
			mu.Unlock()
		}()
	}
	created.Wait()
	wait := func() {}
	if profDir != "" {
		wait = s.profile(filepath.Join(profDir, fileName(label+"-watch-delivery")+".cpu.pprof"), o.profileFor)
	}
	cpu0 := s.cpuTime()
	putter := cs[conns]
	for i := 0; i < o.events; i++ {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := putter.Put(pctx, fmt.Sprintf("watch/%06d", i), strconv.FormatInt(time.Now().UnixNano(), 10))
		pcancel()
		if err != nil {
			return smp, fmt.Errorf("put %d: %w", i, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	done.Wait()
	cpu := s.cpuTime() - cpu0
	wait()
	r := summarize(lat)
	smp.values[figWatchP99] = float64(r.p99)
	smp.values[figWatchMax] = float64(r.max)
	fmt.Printf("%-12s %d watchers x %d events: delivery p50 %v p99 %v max %v, %d missed; server CPU %v (%v per delivery)\n", label, o.watchers, o.events, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.max.Round(time.Microsecond), missed,
		cpu.Round(time.Millisecond), (cpu / time.Duration(max(1, len(lat)))).Round(10*time.Nanosecond))
	if missed > 0 {
		return smp, fmt.Errorf("%d of %d deliveries missed", missed, o.watchers*o.events)
	}
	return smp, nil
}
