package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"etcdx/pkg/judge"
)

// watcher watches the ledger for the whole run, through member restarts, and records every
// put event it receives.
type watcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	// ready is closed once the watcher knows the revision it starts from.
	ready chan struct{}

	mu      sync.Mutex
	events  []judge.Event
	excused []judge.RevRange
	next    int64 // the revision the watch resumes from when it has to be opened again
	err     string
}

func startWatcher(cli *clientv3.Client, prefix string) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	wt := &watcher{cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	go wt.run(ctx, cli, prefix)
	return wt
}

func (wt *watcher) run(ctx context.Context, cli *clientv3.Client, prefix string) {
	defer close(wt.done)
	// Start from the revision the cluster is at, so every later ledger write must show up.
	// Clients may already be writing: what they wrote up to that revision came before the
	// watcher and is not owed by it.
	for {
		gctx, cancel := context.WithTimeout(ctx, opTimeout)
		resp, err := cli.Get(gctx, prefix+"start", clientv3.WithCountOnly())
		cancel()
		if err == nil {
			wt.mu.Lock()
			wt.next = resp.Header.Revision + 1
			wt.excused = append(wt.excused, judge.RevRange{From: 1, To: resp.Header.Revision})
			wt.mu.Unlock()
			close(wt.ready)
			break
		}
		if ctx.Err() != nil {
			return
		}
	}
	for ctx.Err() == nil {
		wt.mu.Lock()
		from := wt.next
		wt.mu.Unlock()
		for resp := range cli.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(from)) {
			if resp.CompactRevision != 0 {
				// The revisions from here up to the compaction are gone: the watch cannot
				// owe them. It resumes at the compaction.
				wt.mu.Lock()
				wt.excused = append(wt.excused, judge.RevRange{From: wt.next, To: resp.CompactRevision - 1})
				wt.next = resp.CompactRevision
				wt.mu.Unlock()
				break
			}
			if err := resp.Err(); err != nil {
				wt.mu.Lock()
				wt.err = err.Error()
				wt.mu.Unlock()
				break
			}
			wt.mu.Lock()
			for _, ev := range resp.Events {
				if ev.Type == mvccpb.PUT {
					wt.events = append(wt.events, judge.Event{Key: string(ev.Kv.Key), Rev: ev.Kv.ModRevision})
				}
				wt.next = ev.Kv.ModRevision + 1
			}
			wt.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// seen waits until the watcher has reached revision rev, or ctx ends.
func (wt *watcher) seen(ctx context.Context, rev int64) bool {
	for {
		wt.mu.Lock()
		next := wt.next
		wt.mu.Unlock()
		if next > rev {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (wt *watcher) close() {
	wt.cancel()
	<-wt.done
}

// leases holds a lease kept alive through the run and one left to expire, each with a key.
type leases struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex
	kept        clientv3.LeaseID
	keptKey     string
	expiringKey string
	granted     time.Time
	ttl         time.Duration
	err         error
	// lost says the keeper found the kept lease gone while the run went on; lastAnswer is the
	// last keep-alive answer before that.
	lost       bool
	lastAnswer time.Time
}

func startLeases(cli *clientv3.Client, prefix string, keptTTL, expiringTTL int64) *leases {
	ctx, cancel := context.WithCancel(context.Background())
	l := &leases{cancel: cancel, done: make(chan struct{}), keptKey: prefix + "kept", expiringKey: prefix + "expiring",
		ttl: time.Duration(expiringTTL) * time.Second}
	go func() {
		defer close(l.done)
		err := l.grant(ctx, cli, keptTTL, expiringTTL)
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		if err == nil {
			l.keep(ctx, cli)
		}
	}()
	return l
}

// keep keeps the first lease alive until ctx ends. The client library stops sending keep-alives
// once a lease's TTL passes without an answer, which a member replacement longer than the TTL
// does; a member that restarts gives its leases a fresh TTL, so the keeper asks whether the
// lease is still there and keeps it alive again, as a client that must hold a lease would. Only
// a lease the cluster no longer has counts as lost.
func (l *leases) keep(ctx context.Context, cli *clientv3.Client) {
	l.mu.Lock()
	id := l.kept
	l.lastAnswer = l.granted
	l.mu.Unlock()
	for ctx.Err() == nil {
		ka, err := cli.KeepAlive(ctx, id)
		if err != nil {
			return // ctx ended or the client closed
		}
		for range ka {
			l.mu.Lock()
			l.lastAnswer = time.Now()
			l.mu.Unlock()
		}
		switch exists, err := leaseExists(ctx, cli, id); {
		case err != nil:
			return // ctx ended while the cluster did not answer
		case !exists:
			l.mu.Lock()
			l.lost = true
			l.mu.Unlock()
			return
		}
	}
}

// leaseExists asks the cluster, until it answers or ctx ends, whether lease id is still there.
// Between tries it has gRPC connect again at once: after an outage longer than the TTL, gRPC's
// reconnect backoff (up to 10 s apart by then) could outlast the fresh TTL the returning member
// gave the lease, and the lease would run out before the keeper reached it.
func leaseExists(ctx context.Context, cli *clientv3.Client, id clientv3.LeaseID) (bool, error) {
	for {
		// Short tries: the client library waits out a try while the member is down, and each
		// try ends in a reconnect at once.
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		r, err := cli.TimeToLive(cctx, id)
		cancel()
		if err == nil {
			return r.TTL > 0, nil
		}
		if cc := cli.ActiveConnection(); cc != nil {
			cc.ResetConnectBackoff()
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (l *leases) grant(ctx context.Context, cli *clientv3.Client, keptTTL, expiringTTL int64) error {
	var last error
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		kept, err := cli.Grant(cctx, keptTTL)
		if err == nil {
			_, err = cli.Put(cctx, l.keptKey, "kept", clientv3.WithLease(kept.ID))
		}
		var exp *clientv3.LeaseGrantResponse
		if err == nil {
			exp, err = cli.Grant(cctx, expiringTTL)
		}
		if err == nil {
			_, err = cli.Put(cctx, l.expiringKey, "expiring", clientv3.WithLease(exp.ID))
		}
		cancel()
		if err == nil {
			l.mu.Lock()
			l.kept, l.granted = kept.ID, time.Now()
			l.mu.Unlock()
			return nil
		}
		last = err
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("grant the workload's leases: %v", last)
}

func (l *leases) close() {
	l.cancel()
	<-l.done
}

// verify requires the kept lease's key to be there with time to live, and the expiring one's
// key gone (waiting for its expiry where the run was shorter).
func (l *leases) verify(ctx context.Context, cli *clientv3.Client) []string {
	var problems []string
	found := func(c judge.Check, format string, a ...any) {
		problems = append(problems, judge.Finding{Check: c, Detail: fmt.Sprintf(format, a...)}.String())
	}
	l.mu.Lock()
	err, kept, granted, lost, lastAnswer := l.err, l.kept, l.granted, l.lost, l.lastAnswer
	l.mu.Unlock()
	if err != nil {
		return []string{err.Error()}
	}
	if kept == 0 {
		return []string{"the workload's leases were never granted"}
	}
	if lost {
		found(judge.LeaseExpiredEarly, "the cluster dropped the lease kept alive through the run (its last keep-alive answer came %s after the grant)",
			lastAnswer.Sub(granted).Round(time.Second))
	}
	if r, err := cli.Get(ctx, l.keptKey); err != nil {
		problems = append(problems, fmt.Sprintf("read the kept lease's key: %v", err))
	} else if len(r.Kvs) != 1 || clientv3.LeaseID(r.Kvs[0].Lease) != kept {
		found(judge.LeaseExpiredEarly, "the key of the lease kept alive through the run is gone")
	}
	if ttl, err := cli.TimeToLive(ctx, kept); err != nil || ttl.TTL <= 0 {
		found(judge.LeaseExpiredEarly, "the lease kept alive through the run expired (ttl %v, %v)", ttl, err)
	}
	// Leases get a fresh TTL when leadership moves, so allow a few elections' worth.
	deadline := granted.Add(l.ttl + 20*time.Second)
	for {
		r, err := cli.Get(ctx, l.expiringKey)
		if err == nil && len(r.Kvs) == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			found(judge.LeaseNeverExpired, "the key of a lease left to expire (ttl %v) is still there %v after its grant", l.ttl, time.Since(granted).Round(time.Second))
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return problems
}

// Verdict is what Verify found besides lost writes and linearizability.
type Verdict struct {
	WatchEvents int      `json:"watchEvents"`
	Problems    []string `json:"problems,omitempty"`
}

// Verify runs the end-of-run checks on the observers: the watcher saw every acknowledged
// ledger write once and in order, every client's revisions went forward, the kept lease
// lives and the other expired. Call it after Stop.
func (w *Workload) Verify(ctx context.Context) Verdict {
	var v Verdict
	// A last write marks how far the watcher must get.
	sentinel := w.cfg.Prefix + "/ledger/end"
	var end int64
	for i := 0; i < 20 && end == 0; i++ {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		r, err := w.cli.Put(cctx, sentinel, "end")
		cancel()
		if err == nil {
			end = r.Header.Revision
		}
	}
	w.mu.Lock()
	acked := append([]judge.Event(nil), w.acked...)
	revs := map[int][]judge.Seen{}
	for c, r := range w.revs {
		revs[c] = append([]judge.Seen(nil), r...)
	}
	v.Problems = append(v.Problems, w.anomalies...)
	w.mu.Unlock()
	if end == 0 {
		v.Problems = append(v.Problems, "could not write the end marker the watch check waits for")
	} else {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		caught := w.watch.seen(wctx, end)
		cancel()
		w.watch.mu.Lock()
		events, excused, werr := append([]judge.Event(nil), w.watch.events...), w.watch.excused, w.watch.err
		w.watch.mu.Unlock()
		v.WatchEvents = len(events)
		if !caught {
			v.Problems = append(v.Problems, fmt.Sprintf("the watcher did not reach revision %d within 30s (last error: %s)", end, werr))
		}
		v.Problems = append(v.Problems, judge.Strings(judge.Watch("the watcher", events, judge.WatchReference{Acked: acked, From: 1, UpTo: end, Excused: excused}))...)
	}
	v.Problems = append(v.Problems, judge.Strings(judge.Monotonic(revs))...)
	v.Problems = append(v.Problems, w.leases.verify(ctx, w.cli)...)
	return v
}

// Preload writes about size bytes of 1 KiB values under prefix (16 writers at a time), so
// that members joining or catching up later need a database snapshot.
func Preload(ctx context.Context, cli *clientv3.Client, prefix string, size int64) (int, error) {
	const valueSize = 1024
	n := int((size + valueSize - 1) / valueSize)
	value := strings.Repeat("p", valueSize)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s%08d", prefix, i)
		g.Go(func() error {
			var err error
			for try := 0; try < 5; try++ {
				cctx, cancel := context.WithTimeout(ctx, opTimeout)
				_, err = cli.Put(cctx, key, value)
				cancel()
				if err == nil || errors.Is(ctx.Err(), context.Canceled) {
					return err
				}
			}
			return fmt.Errorf("preload %s: %w", key, err)
		})
	}
	return n, g.Wait()
}
