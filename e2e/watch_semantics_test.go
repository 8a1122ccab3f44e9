package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// With --watch-progress-notify-interval, a watcher that asked for progress hears of it every
// interval (plus up to a tenth of jitter) while nothing happens, as upstream: a progress
// notification does not suppress the next one, only a response that carried events does.
func TestWatchProgressNotifyEveryInterval(t *testing.T) {
	m := NewMember(t, "--watch-progress-notify-interval", "1s")
	m.Start()
	c := m.Client()
	if _, err := c.Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wch := c.Watch(ctx, "k", clientv3.WithProgressNotify())
	start := time.Now()
	progress := 0
	for time.Since(start) < 6*time.Second {
		select {
		case wr := <-wch:
			if wr.Err() != nil || len(wr.Events) > 0 {
				t.Fatalf("unexpected watch response %+v (%v)", wr, wr.Err())
			}
			if wr.IsProgressNotify() {
				progress++
			}
		case <-time.After(time.Until(start.Add(6 * time.Second))):
		}
	}
	// One per 1.0–1.1 s over 6 s is 5; before the fix every other tick was skipped (2 or 3).
	if progress < 4 {
		t.Fatalf("%d progress notifications in 6s with a 1s interval", progress)
	}
}

// A watch opened with clientv3.WithRequireLeader (the "hasleader" metadata) on a member that
// loses its leader is cancelled with upstream's "etcdserver: no leader", so the client moves to a
// healthy member; requests that require a leader are refused at once; a watch that did not ask
// stays open.
func TestRequireLeaderWatchOnAMemberCutOff(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	isolated := c.Members[2]
	cl := isolated.Client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	strict := cl.Watch(clientv3.WithRequireLeader(ctx), "k")
	lax := cl.Watch(ctx, "k")
	if _, err := cl.Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	for _, wch := range []clientv3.WatchChan{strict, lax} {
		if wr := <-wch; wr.Err() != nil || len(wr.Events) != 1 {
			t.Fatalf("before the cut: %+v %v", wr, wr.Err())
		}
	}
	// Cut the member off its quorum: the other two are gone.
	c.Members[0].Kill()
	c.Members[1].Kill()
	deadline := time.After(20 * time.Second)
	var got error
	for got == nil {
		select {
		case wr, ok := <-strict:
			if !ok {
				t.Fatal("the require-leader watch closed without an error")
			}
			got = wr.Err()
		case <-deadline:
			t.Fatal("the require-leader watch is still open 20s after the member lost its quorum")
		}
	}
	if !errors.Is(got, rpctypes.ErrNoLeader) {
		t.Fatalf("require-leader watch ended with %v, want %v", got, rpctypes.ErrNoLeader)
	}
	rctx, rcancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), 5*time.Second)
	defer rcancel()
	if _, err := cl.Get(rctx, "k", clientv3.WithSerializable()); !errors.Is(err, rpctypes.ErrNoLeader) {
		t.Fatalf("a serializable get that requires a leader: %v, want %v", err, rpctypes.ErrNoLeader)
	}
	if _, err := cl.Get(Ctx(t), "k", clientv3.WithSerializable()); err != nil {
		t.Fatalf("a serializable get that does not: %v", err)
	}
	select {
	case wr, ok := <-lax:
		t.Fatalf("the watch without require-leader ended: %v %v", ok, wr.Err())
	default:
	}
}
