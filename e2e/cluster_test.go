package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestThreeMemberClusterSurvivesLeaderKill(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	cl := c.Client()
	ctx := Ctx(t)

	ml, err := cl.MemberList(ctx)
	if err != nil || len(ml.Members) != 3 {
		t.Fatalf("member list: %+v %v", ml, err)
	}
	for _, m := range ml.Members {
		if m.Name == "" || len(m.ClientURLs) != 1 || len(m.PeerURLs) != 1 {
			t.Fatalf("member not fully published: %+v", m)
		}
	}

	// A write through one member is read linearizably through every other.
	if _, err := c.Members[0].Client().Put(ctx, "hello", "cluster"); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members {
		r, err := m.Client().Get(ctx, "hello")
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "cluster" {
			t.Fatalf("linearizable read on %s: %+v %v", m.Name, r, err)
		}
	}

	// Leases granted and kept alive through a follower; the leader judges the TTL.
	lead := c.Leader(10 * time.Second)
	var follower *Member
	for _, m := range c.Members {
		if m != lead {
			follower = m
			break
		}
	}
	fc := follower.Client()
	g, err := fc.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	fc.Put(ctx, "leased", "x", clientv3.WithLease(g.ID))
	if ka, err := fc.KeepAliveOnce(ctx, g.ID); err != nil || ka.TTL != 30 {
		t.Fatalf("keep-alive through a follower: %+v %v", ka, err)
	}
	if ttl, err := fc.TimeToLive(ctx, g.ID, clientv3.WithAttachedKeys()); err != nil || ttl.TTL < 28 || len(ttl.Keys) != 1 {
		t.Fatalf("time-to-live through a follower: %+v %v", ttl, err)
	}

	// Kill the leader during writes: a new leader takes over and nothing acknowledged is lost.
	stop := make(chan struct{})
	done := make(chan map[string]string)
	go func() { done <- writeAcked(t, cl, "ha", 8, 100000, stop) }()
	time.Sleep(time.Second)
	lead.Kill()
	killedAt := time.Now()
	newLead := c.Leader(10 * time.Second)
	if newLead == lead {
		t.Fatal("the killed member is still reported as leader")
	}
	t.Logf("new leader %s after %v", newLead.Name, time.Since(killedAt).Round(time.Millisecond))
	time.Sleep(time.Second) // writes continue on the new leader
	close(stop)
	acked := <-done
	if len(acked) < 200 {
		t.Fatalf("only %d writes acknowledged around the leader change", len(acked))
	}
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cl.Put(wctx, "after-failover", "ok"); err != nil {
		t.Fatalf("write after failover: %v", err)
	}

	// The old leader comes back and catches up; every member holds every acknowledged write.
	lead.Start()
	for _, m := range c.Members {
		deadline := time.Now().Add(15 * time.Second)
		for {
			r, err := m.Client().Get(ctx, "after-failover", clientv3.WithSerializable())
			if err == nil && len(r.Kvs) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not catch up: %v", m.Name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		checkAcked(t, m.Client(), "ha", acked)
	}
	t.Logf("%d acknowledged writes present on all three members", len(acked))
}

func TestPeerHandshakeRefusesAnotherCluster(t *testing.T) {
	c := NewCluster(t, 2)
	// Same member list, different tokens: the two members compute different cluster IDs.
	c.Members[0].Extra = []string{"--initial-cluster-token", "cluster-a"}
	c.Members[1].Extra = []string{"--initial-cluster-token", "cluster-b"}
	startRefusingPeers(t, c,
		[]string{"request cluster ID mismatch", "remote-peer-cluster-id"},
		[]string{"request sent was ignored by remote peer", "cluster ID mismatch: this member is in cluster"})
}

func TestLaggingMemberCatchesUpFromSnapshot(t *testing.T) {
	c := NewCluster(t, 3, "--snapshot-count", "100")
	c.Start()
	cl := c.Client()
	lagger := c.Members[2]
	lagger.Kill()
	c.Leader(10 * time.Second) // the survivors agree on a leader before the writes start
	// Far more entries than the leader keeps in its log (100 behind its last snapshot).
	live, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[0].ClientURL, c.Members[1].ClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	acked := writeAcked(t, live, "lag", 8, 1600, nil)
	if len(acked) != 1600 {
		t.Fatalf("only %d of 1600 writes acknowledged with two of three members up", len(acked))
	}
	lagger.Start()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := lagger.Client().Get(Ctx(t), "lag/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
		if err == nil && r.Count == 1600 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lagging member did not catch up: %+v %v\n%s", r, err, lagger.LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(lagger.Log(), "applied snapshot") {
		t.Fatal("the member caught up without a snapshot; the test did not exercise snapshot shipping")
	}
	checkAcked(t, lagger.Client(), "lag", acked)
	// It keeps replicating normally afterwards, and survives its own restart.
	if _, err := cl.Put(Ctx(t), "after-snapshot", "1"); err != nil {
		t.Fatal(err)
	}
	lagger.Kill()
	lagger.Start()
	deadline = time.Now().Add(10 * time.Second)
	for {
		r, err := lagger.Client().Get(Ctx(t), "after-snapshot", clientv3.WithSerializable())
		if err == nil && len(r.Kvs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart: %v\n%s", err, lagger.LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkAcked(t, lagger.Client(), "lag", acked)
}

func TestFiveMemberClusterToleratesTwoFailures(t *testing.T) {
	c := NewCluster(t, 5)
	c.Start()
	lead := c.Leader(10 * time.Second)
	// Kill the leader and one follower: three of five remain, still a quorum.
	killed := []*Member{lead}
	for _, m := range c.Members {
		if m != lead {
			killed = append(killed, m)
			break
		}
	}
	for _, m := range killed {
		m.Kill()
	}
	var alive []string
	for _, m := range c.Members {
		if m != killed[0] && m != killed[1] {
			alive = append(alive, m.ClientURL)
		}
	}
	cl, err := clientv3.New(clientv3.Config{Endpoints: alive, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c.Leader(10 * time.Second)
	acked := writeAcked(t, cl, "five", 4, 400, nil)
	if len(acked) != 400 {
		t.Fatalf("%d of 400 writes with 3 of 5 members up", len(acked))
	}
	// A third failure leaves no quorum: writes must fail, not be acknowledged.
	for _, m := range c.Members {
		if m != killed[0] && m != killed[1] {
			m.Kill()
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := cl.Put(ctx, "no-quorum", "x"); err == nil {
		t.Fatal("a write was acknowledged without a quorum")
	}
	// Everyone back: all acknowledged writes are on every member.
	for _, m := range c.Members {
		select {
		case <-m.Exited():
			if err := m.StartNoWait(); err != nil {
				t.Fatal(err)
			}
		default:
		}
	}
	for _, m := range c.Members {
		if err := m.WaitHealthy(30 * time.Second); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	for _, m := range c.Members {
		checkAcked(t, m.Client(), "five", acked)
	}
}

// TestLeaseTTLAfterLeaderChange: with upstream's LeaseCheckpoint gate on, the leader
// checkpoints remaining TTLs (every second here), so a new leader carries a neglected lease on
// from its checkpoint; with the gate off, as by default in upstream 3.5 to 3.7, nothing is
// checkpointed and a new leader gives every lease its whole TTL again. A renewed lease has its
// whole TTL either way (its checkpoint is cleared with the renewal).
func TestLeaseTTLAfterLeaderChange(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("LeaseCheckpoint=%t", gate), func(t *testing.T) {
			c := NewCluster(t, 3, "--lease-checkpoint-interval", "1s", fmt.Sprintf("--feature-gates=LeaseCheckpoint=%t", gate))
			c.Start()
			ctx := Ctx(t)
			lead := c.Leader(10 * time.Second)
			lc := lead.Client()
			neglected, err := lc.Grant(ctx, 30)
			if err != nil {
				t.Fatal(err)
			}
			renewed, _ := lc.Grant(ctx, 30)
			time.Sleep(5 * time.Second) // several checkpoint rounds
			if _, err := lc.KeepAliveOnce(ctx, renewed.ID); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // the renewal's checkpoint reset is applied everywhere

			var target *Member
			for _, m := range c.Members {
				if m != lead {
					target = m
					break
				}
			}
			st, _ := target.Client().Status(ctx, target.ClientURL)
			if _, err := lc.MoveLeader(ctx, st.Header.MemberId); err != nil {
				t.Fatal(err)
			}
			if c.Leader(5*time.Second) != target {
				t.Fatal("leadership did not move")
			}
			tc := target.Client()
			n, err := tc.TimeToLive(ctx, neglected.ID)
			if err != nil {
				t.Fatal(err)
			}
			// ~6.5s have passed: with checkpoints the new leader continues from the last one
			// (plus one election timeout of grace); without, it grants the whole 30 s again.
			if gate && n.TTL > 27 {
				t.Fatalf("neglected lease TTL after leader change = %d, want it to keep running down (<= 27)", n.TTL)
			}
			if !gate && n.TTL < 28 {
				t.Fatalf("neglected lease TTL after leader change = %d, want its whole 30 s again, as upstream without checkpoints", n.TTL)
			}
			r, err := tc.TimeToLive(ctx, renewed.ID)
			if err != nil {
				t.Fatal(err)
			}
			if r.TTL < 27 {
				t.Fatalf("renewed lease TTL after leader change = %d, want about its full 30s", r.TTL)
			}
			t.Logf("after the leader change: neglected lease %ds, renewed lease %ds", n.TTL, r.TTL)
		})
	}
}
