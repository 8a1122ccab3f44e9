package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestRollingRestartUnderLoad(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	cl := c.Client()

	// A watcher and a kept-alive lease ride through the restarts on long-lived streams.
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	seen := map[string]bool{}
	var seenMu sync.Mutex
	var watchErr atomic.Value
	wch := cl.Watch(wctx, "roll/", clientv3.WithPrefix())
	go func() {
		for wr := range wch {
			if err := wr.Err(); err != nil {
				watchErr.Store(err.Error())
				continue
			}
			seenMu.Lock()
			for _, ev := range wr.Events {
				seen[string(ev.Kv.Key)] = true
			}
			seenMu.Unlock()
		}
	}()
	lg, err := cl.Grant(Ctx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	ka, err := cl.KeepAlive(wctx, lg.ID)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range ka {
		}
	}()

	stop := make(chan struct{})
	done := make(chan rollingWrites)
	go func() { done <- writeThrough(cl, "roll", 8, stop) }()

	// Linearizable readers: the revision they observe never goes backwards.
	var reads, readErrs atomic.Int64
	var backwards atomic.Int64
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				resp, err := cl.Get(ctx, "roll/", clientv3.WithPrefix(), clientv3.WithCountOnly())
				cancel()
				if err != nil {
					readErrs.Add(1)
					continue
				}
				reads.Add(1)
				if resp.Header.Revision < last {
					backwards.Add(1)
				}
				last = resp.Header.Revision
			}
		}()
	}

	for _, m := range c.Members {
		time.Sleep(700 * time.Millisecond)
		if err := m.Stop(); err != nil {
			t.Fatalf("SIGTERM %s: %v\n%s", m.Name, err, m.LogTail(10))
		}
		if err := m.ExitErr(); !endedBy(err, syscall.SIGTERM) {
			t.Fatalf("%s ended with %v after SIGTERM", m.Name, err)
		}
		m.Start()
	}
	time.Sleep(700 * time.Millisecond)
	close(stop)
	w := <-done
	acked := w.acked
	wg.Wait()
	if len(w.failed) > 0 || readErrs.Load() > 0 {
		t.Errorf("a rolling restart must fail no client request: %d writes and %d reads failed", len(w.failed), readErrs.Load())
		for _, f := range w.failed {
			t.Logf("failed write: %s", f)
		}
	}
	if backwards.Load() > 0 {
		t.Fatalf("%d linearizable reads saw an older revision than an earlier read", backwards.Load())
	}
	if len(acked) < 500 || reads.Load() < 100 {
		t.Fatalf("too little load to prove anything: %d writes, %d reads", len(acked), reads.Load())
	}
	for _, m := range c.Members {
		deadline := time.Now().Add(15 * time.Second)
		for {
			r, err := m.Client().Get(Ctx(t), "roll/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
			if err == nil && r.Count >= int64(len(acked)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not catch up", m.Name)
			}
			time.Sleep(100 * time.Millisecond)
		}
		checkAcked(t, m.Client(), "roll", acked)
	}
	// The watch resumed across every restart without a gap: it saw each acknowledged write.
	deadline := time.Now().Add(15 * time.Second)
	for {
		seenMu.Lock()
		missing := 0
		for k := range acked {
			if !seen[k] {
				missing++
			}
		}
		seenMu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher missed %d of %d acknowledged writes (last watch error: %v)", missing, len(acked), watchErr.Load())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The lease's keep-alive stream moved between members: it is still alive, well past its TTL.
	ttl, err := cl.TimeToLive(Ctx(t), lg.ID)
	if err != nil || ttl.TTL <= 0 {
		t.Fatalf("kept-alive lease expired during the rolling restart: ttl %v, %v", ttl, err)
	}
	t.Logf("rolling restart: %d acknowledged writes kept on every member; %d reads (%d failed)", len(acked), reads.Load(), readErrs.Load())
}

func TestMoveLeader(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	lead := c.Leader(10 * time.Second)
	var target *Member
	for _, m := range c.Members {
		if m != lead {
			target = m
		}
	}
	ctx := Ctx(t)
	tst, _ := target.Client().Status(ctx, target.ClientURL)
	if _, err := target.Client().MoveLeader(ctx, tst.Header.MemberId); !errors.Is(err, rpctypes.ErrNotLeader) {
		t.Fatalf("move-leader sent to a follower: %v", err)
	}
	if _, err := lead.Client().MoveLeader(ctx, 12345); !errors.Is(err, rpctypes.ErrBadLeaderTransferee) {
		t.Fatalf("move-leader to a stranger: %v", err)
	}
	if _, err := lead.Client().MoveLeader(ctx, tst.Header.MemberId); err != nil {
		t.Fatal(err)
	}
	if now := c.Leader(5 * time.Second); now != target {
		t.Fatalf("leader is %s, want %s", now.Name, target.Name)
	}
	// SIGTERM on the leader hands leadership over before it goes.
	if err := target.Stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(target.Log(), "leadership transferred") {
		t.Fatalf("the stopping leader did not hand over\n%s", target.LogTail(10))
	}
}

// TestReadsCarryOnThroughLeaderChanges: linearizable reads on a follower while leadership moves
// back and forth between the other two members. Raft drops a ReadIndex while the follower knows
// no leader, and a leader that steps down forgets the ones it holds; the follower must ask the
// new leader at once, not wait for the next retry (upstream's slow-read-index counter counts
// each such retry), and no read may fail.
func TestReadsCarryOnThroughLeaderChanges(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	lead := c.Leader(10 * time.Second)
	var reader *Member
	var voters []*Member
	for _, m := range c.Members {
		if m != lead && reader == nil {
			reader = m
		} else {
			voters = append(voters, m)
		}
	}
	ids := map[*Member]uint64{}
	ctx := Ctx(t)
	for _, m := range voters {
		cl := m.Client()
		st, err := cl.Status(ctx, m.ClientURL)
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		ids[m] = st.Header.MemberId
	}
	rc := reader.Client()
	defer rc.Close()
	if _, err := rc.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	slowBefore := metricValue(t, reader, "etcd_server_slow_read_indexes_total")
	stop := make(chan struct{})
	var reads, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := rc.Get(rctx, "k")
				cancel()
				reads.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	const moves = 10
	from, to := lead, voters[0]
	if from == to {
		to = voters[1]
	}
	for i := 0; i < moves; i++ {
		time.Sleep(100 * time.Millisecond) // reads in flight before each move
		cl := from.Client()
		_, err := cl.MoveLeader(ctx, ids[to])
		cl.Close()
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("move %d: %v", i+1, err)
		}
		from, to = to, from
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d reads failed across %d leader changes, first: %v", failed.Load(), reads.Load(), moves, firstErr.Load())
	}
	if slow := metricValue(t, reader, "etcd_server_slow_read_indexes_total") - slowBefore; slow > 0 {
		t.Fatalf("%.0f read index rounds waited for a retry across %d leader changes (%d reads)", slow, moves, reads.Load())
	}
	t.Logf("%d reads on a follower across %d leader changes, none retried", reads.Load(), moves)
}

// rollingWrites is what writeThrough saw: acknowledged writes and every failure, in order.
type rollingWrites struct {
	acked  map[string]string
	failed []string
}

// writeThrough writes unique keys from several workers until stop, carrying on past errors so a
// failure in one phase of a test does not hide the next.
func writeThrough(c *clientv3.Client, prefix string, workers int, stop <-chan struct{}) rollingWrites {
	var mu sync.Mutex
	res := rollingWrites{acked: map[string]string{}}
	start := time.Now()
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
				k, v := fmt.Sprintf("%s/%d/%06d", prefix, w, i), fmt.Sprintf("v%d", i)
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := c.Put(ctx, k, v)
				cancel()
				mu.Lock()
				if err != nil {
					res.failed = append(res.failed, fmt.Sprintf("%s at +%v after %v: %v", k, t0.Sub(start).Round(time.Millisecond), time.Since(t0).Round(time.Millisecond), err))
				} else {
					res.acked[k] = v
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	return res
}
