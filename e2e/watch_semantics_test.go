package e2e

import (
	"context"
	"errors"
	"fmt"
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

// A watch from a revision the member has not reached gets no progress notification until it
// does, neither the periodic one nor an asked-for one, as upstream 3.7.3's (progressIfSync): the
// client library resumes a broken watch after the last progress revision it saw, so ours' old
// notification at the member's revision, below the start, made a resumed watch deliver events
// from before its start (upstream's robustness suite: "broke Resumable", a member behind after a
// restart). Once the member reaches the start, the watch gets that revision's event first.
func TestNoProgressBeforeTheStartRevisionAsUpstream(t *testing.T) {
	for _, side := range []struct{ name, bin string }{{"ours", ""}, {"upstream", UpstreamBinary(t, "etcd")}} {
		t.Run(side.name, func(t *testing.T) {
			m := NewMember(t, "--watch-progress-notify-interval", "200ms")
			if side.bin != "" {
				m.Bin = side.bin
			}
			m.Start()
			c := m.Client()
			if _, err := c.Put(Ctx(t), "k", "1"); err != nil { // revision 2
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wch := c.Watch(ctx, "k", clientv3.WithRev(6), clientv3.WithProgressNotify())
			asked := time.NewTicker(300 * time.Millisecond)
			defer asked.Stop()
			quiet := time.After(1500 * time.Millisecond)
		wait:
			for {
				select {
				case wr := <-wch:
					t.Fatalf("at revision 2, a watch from 6 got a response: revision %d, progress %v, %d events", wr.Header.Revision, wr.IsProgressNotify(), len(wr.Events))
				case <-asked.C:
					if err := c.RequestProgress(ctx); err != nil {
						t.Fatal(err)
					}
				case <-quiet:
					break wait
				}
			}
			for i := 2; i <= 5; i++ { // revisions 3 to 6
				if _, err := c.Put(Ctx(t), "k", fmt.Sprint(i)); err != nil {
					t.Fatal(err)
				}
			}
			for {
				select {
				case wr := <-wch:
					if wr.IsProgressNotify() {
						if wr.Header.Revision < 6 {
							t.Fatalf("progress at revision %d before the event of revision 6", wr.Header.Revision)
						}
						continue
					}
					if len(wr.Events) != 1 || wr.Events[0].Kv.ModRevision != 6 || string(wr.Events[0].Kv.Value) != "5" {
						t.Fatalf("first events %+v, want the put of revision 6", wr.Events)
					}
					return
				case <-time.After(10 * time.Second):
					t.Fatal("no event of revision 6")
				}
			}
		})
	}
}
