package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func recvWatch(t *testing.T, ch clientv3.WatchChan) clientv3.WatchResponse {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a watch response")
	}
	return clientv3.WatchResponse{}
}

func TestWatch(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	c.Put(ctx, "w/a", "1") // rev 2
	c.Put(ctx, "w/b", "1") // rev 3
	c.Put(ctx, "w/a", "2") // rev 4

	// Several watchers share one gRPC stream when they share a context.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	hist := c.Watch(wctx, "w/", clientv3.WithPrefix(), clientv3.WithRev(2), clientv3.WithPrevKV())
	live := c.Watch(wctx, "w/a")
	noPut := c.Watch(wctx, "w/", clientv3.WithPrefix(), clientv3.WithFilterPut())

	r := recvWatch(t, hist)
	var got []string
	for len(got) < 3 {
		for _, ev := range r.Events {
			got = append(got, fmt.Sprintf("%s:%s@%d", ev.Kv.Key, ev.Kv.Value, ev.Kv.ModRevision))
		}
		if len(got) < 3 {
			r = recvWatch(t, hist)
		}
	}
	if strings.Join(got, " ") != "w/a:1@2 w/b:1@3 w/a:2@4" {
		t.Fatalf("historical events: %v", got)
	}
	if ev := r.Events[len(r.Events)-1]; ev.PrevKv == nil || string(ev.PrevKv.Value) != "1" {
		t.Fatalf("prev kv on historical update: %+v", ev.PrevKv)
	}

	c.Delete(ctx, "w/a") // rev 5
	ev := recvWatch(t, live).Events[0]
	if ev.Type != mvccpb.DELETE || ev.Kv.ModRevision != 5 {
		t.Fatalf("live delete event: %+v", ev)
	}
	ev = recvWatch(t, noPut).Events[0]
	if ev.Type != mvccpb.DELETE {
		t.Fatalf("NOPUT filter passed a %v", ev.Type)
	}
	if hev := recvWatch(t, hist).Events[0]; hev.PrevKv == nil || string(hev.PrevKv.Value) != "2" {
		t.Fatalf("delete event prev kv: %+v", hev)
	}

	// A progress request answers with the current revision and no events.
	if err := c.RequestProgress(wctx); err != nil {
		t.Fatal(err)
	}
	pr := recvWatch(t, live)
	if !pr.IsProgressNotify() || pr.Header.Revision != 5 {
		t.Fatalf("progress response: %+v", pr)
	}

	// Cancel: the channel closes.
	cancel()
	select {
	case _, ok := <-live:
		for ok {
			_, ok = <-live
		}
	case <-time.After(10 * time.Second):
		t.Fatal("canceled watch did not close")
	}
}

func TestWatchCompactedAndFragment(t *testing.T) {
	m := NewMember(t, "--max-request-bytes", "65536")
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	for i := 0; i < 5; i++ {
		c.Put(ctx, "k", fmt.Sprint(i))
	}
	if _, err := c.Compact(ctx, 5); err != nil {
		t.Fatal(err)
	}
	r := recvWatch(t, c.Watch(ctx, "k", clientv3.WithRev(2)))
	if r.CompactRevision != 5 || !r.Canceled {
		t.Fatalf("watch below compaction: compact=%d canceled=%v err=%v", r.CompactRevision, r.Canceled, r.Err())
	}
	if !errors.Is(r.Err(), rpctypes.ErrCompacted) {
		t.Fatalf("compacted watch error: %v", r.Err())
	}

	// A catch-up from history carries forty 4 KiB events: more than the 64 KiB request limit.
	rev := func() int64 { g, _ := c.Get(ctx, "k"); return g.Header.Revision }() + 1
	val := strings.Repeat("v", 4096)
	for i := 0; i < 40; i++ {
		if _, err := c.Put(ctx, fmt.Sprintf("f/%02d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	fr := recvWatch(t, c.Watch(ctx, "f/", clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithFragment()))
	if len(fr.Events) != 40 {
		t.Fatalf("fragmented watch delivered %d events, want 40 reassembled", len(fr.Events))
	}
	// On the wire: several messages, all but the last marked as fragments, none over the limit.
	ws, err := pb.NewWatchClient(c.ActiveConnection()).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{
		Key: []byte("f/"), RangeEnd: []byte("f0"), StartRevision: rev, Fragment: true}}})
	msgs, events := 0, 0
	for events < 40 {
		wr, err := ws.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if wr.Created {
			continue
		}
		msgs++
		events += len(wr.Events)
		if wr.Size() > 65536+8192 {
			t.Fatalf("fragment of %d bytes exceeds the request limit", wr.Size())
		}
		if wr.Fragment != (events < 40) {
			t.Fatalf("message %d: fragment=%v with %d/40 events delivered", msgs, wr.Fragment, events)
		}
	}
	if msgs < 2 {
		t.Fatalf("a 160 KiB catch-up came in %d message(s); want it fragmented", msgs)
	}
	// Without the fragment option the server sends it whole.
	whole := recvWatch(t, c.Watch(ctx, "f/", clientv3.WithPrefix(), clientv3.WithRev(rev)))
	if len(whole.Events) != 40 {
		t.Fatalf("unfragmented watch delivered %d events", len(whole.Events))
	}
}

func TestLease(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	g, err := c.Grant(ctx, 60)
	if err != nil || g.TTL != 60 || g.ID == 0 {
		t.Fatalf("grant: %+v %v", g, err)
	}
	c.Put(ctx, "l/1", "a", clientv3.WithLease(g.ID))
	c.Put(ctx, "l/2", "b", clientv3.WithLease(g.ID))
	ttl, err := c.TimeToLive(ctx, g.ID, clientv3.WithAttachedKeys())
	if err != nil || ttl.GrantedTTL != 60 || ttl.TTL < 58 || len(ttl.Keys) != 2 {
		t.Fatalf("time to live: %+v %v", ttl, err)
	}
	ka, err := c.KeepAliveOnce(ctx, g.ID)
	if err != nil || ka.TTL != 60 {
		t.Fatalf("keepalive once: %+v %v", ka, err)
	}
	ls, err := c.Leases(ctx)
	if err != nil || len(ls.Leases) != 1 || ls.Leases[0].ID != g.ID {
		t.Fatalf("leases: %+v %v", ls, err)
	}
	if _, err := c.Grant(ctx, 9000000001); !errors.Is(err, rpctypes.ErrLeaseTTLTooLarge) {
		t.Fatalf("huge TTL: %v", err)
	}
	if _, err := c.Revoke(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if r, _ := c.Get(ctx, "l/", clientv3.WithPrefix()); len(r.Kvs) != 0 {
		t.Fatalf("revoke left keys: %+v", r.Kvs)
	}
	if _, err := c.Revoke(ctx, g.ID); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("revoke twice: %v", err)
	}
	if ttl, _ := c.TimeToLive(ctx, g.ID); ttl.TTL != -1 {
		t.Fatalf("revoked lease TTL = %d, want -1", ttl.TTL)
	}

	// Expiry: the leader revokes through raft once the TTL passes without keepalives.
	short, _ := c.Grant(ctx, 2)
	c.Put(ctx, "exp", "x", clientv3.WithLease(short.ID))
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, _ := c.Get(ctx, "exp")
		if len(r.Kvs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("key on an expired lease is still there after 10s")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A kept-alive lease outlives its TTL.
	kept, _ := c.Grant(ctx, 2)
	c.Put(ctx, "kept", "x", clientv3.WithLease(kept.ID))
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	kch, err := c.KeepAlive(kctx, kept.ID)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range kch {
		}
	}()
	time.Sleep(4 * time.Second)
	if r, _ := c.Get(ctx, "kept"); len(r.Kvs) != 1 {
		t.Fatal("a kept-alive lease expired")
	}
}

// TestKeepAliveAfterExpiryAsUpstream: a keep-alive that reaches the leader after the lease's TTL
// ran out, whether or not the leader has revoked it yet, does not bring it back: the lease is
// not found and its key is gone, in ours as in upstream. (Ours used to renew it when the
// keep-alive beat the leader's next expiry check; the simulation's late keep-alives found it.)
func TestKeepAliveAfterExpiryAsUpstream(t *testing.T) {
	besideUpstream(t, func(t *testing.T, m *Member) []string {
		cl := m.Client()
		var out []string
		for _, late := range []time.Duration{2050 * time.Millisecond, 2250 * time.Millisecond, 2450 * time.Millisecond} {
			g, err := cl.Grant(Ctx(t), 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Put(Ctx(t), "expiring", "v", clientv3.WithLease(g.ID)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(late)
			_, kaErr := cl.KeepAliveOnce(Ctx(t), g.ID)
			r, err := cl.Get(Ctx(t), "expiring")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("keep-alive %v after the grant: %v; the key exists: %v", late, kaErr, len(r.Kvs) == 1))
		}
		return out
	})
}
