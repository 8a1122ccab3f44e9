package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/etcdserver"
	"etcdx/server/mvcc"
	"etcdx/server/version"
)

// Directed tests: one situation each, set up through the harness, with the outcome the server
// must give. Each stays as a regression test for what a seed once found.

func startCluster(t *testing.T, level version.Level) *Cluster {
	t.Helper()
	net := NewNetwork(rand.New(rand.NewSource(1)), Faults{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewCluster(ctx, net, ClusterConfig{Size: 3, Dir: t.TempDir(), Level: level})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func leaderOf(t *testing.T, c *Cluster) *Member {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var lead *Member
	if !waitUntil(ctx, c, func() bool {
		for _, m := range c.Up() {
			if s := m.Server(); s != nil && s.Leader() == s.ID() {
				lead = m
				return true
			}
		}
		return false
	}) {
		t.Fatal("no leader within 10 s")
	}
	return lead
}

// TestCutOffLeaderRenewsNoLease: a leader cut off from the others must not renew a lease. The
// others elect a new leader, which never hears of the renewal and may expire the lease before
// the TTL the client was given (seed 207 saw a lease deleted 199 ms early).
func TestCutOffLeaderRenewsNoLease(t *testing.T) {
	c := startCluster(t, version.Level{})
	old := leaderOf(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := old.Server().LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Server().LeaseRenew(ctx, g.ID); err != nil {
		t.Fatalf("renewal by the leader of a whole cluster: %v", err)
	}
	c.Net.Isolate(c.IDOf(old))
	// Asked at once, before its check-quorum notices: it still believes it leads.
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer rcancel()
	ttl, err := old.Server().LeaseRenew(rctx, g.ID)
	if err == nil {
		t.Fatalf("a leader cut off from every other member renewed the lease (TTL %d)", ttl)
	}
	if !errors.Is(err, etcdserver.ErrNotLeader) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("renewal by a cut-off leader: %v, want not leader", err)
	}
}

// TestReplaceAMember: remove a member, add a learner in its slot, start it on an empty data dir,
// promote it once it has caught up; the new member holds what was written before it came.
func TestReplaceAMember(t *testing.T) {
	c := startCluster(t, version.Level{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put := func(k string) int64 {
		t.Helper()
		resp, err := leaderOf(t, c).Server().Put(ctx, &pb.PutRequest{Key: []byte(k), Value: []byte("v")})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	var last int64
	for i := 0; i < 500; i++ { // beyond a snapshot (every 300 entries): it catches up by snapshot
		last = put(fmt.Sprintf("before/%03d", i))
	}
	old := c.Member(1)
	nm, err := c.Replace(ctx, 1)
	if err != nil || nm == nil {
		t.Fatalf("replace %s: %v, %v", old.Name, nm, err)
	}
	if old.Server() != nil {
		t.Fatalf("%s still runs after its removal", old.Name)
	}
	if err := c.Join(nm); err != nil {
		t.Fatal(err)
	}
	// Caught up by a snapshot, and nothing written since: its power is cut. It must start again
	// (seed 57 of a campaign: the hard state saved with the snapshot was never synced, and the
	// member refused its own data dir).
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	caughtUp := func(rev int64) func() bool {
		return func() bool { s := nm.Server(); return s != nil && s.KV().Rev() >= rev }
	}
	if !waitUntil(wctx, c, caughtUp(last)) {
		t.Fatalf("%s did not catch up", nm.Name)
	}
	c.Crash(nm)
	if err := c.Restart(nm); err != nil {
		t.Fatalf("%s after a power cut just after its snapshot: %v", nm.Name, err)
	}
	if !waitUntil(wctx, c, func() bool { return c.Promote(wctx, nm) }) {
		t.Fatalf("%s not promotable within 10 s", nm.Name)
	}
	waitUntil(wctx, c, caughtUp(put("after")))
	r, err := nm.Server().KV().Range([]byte("before/"), []byte("before0"), mvcc.RangeOptions{})
	if err != nil || len(r.KVs) != 500 {
		t.Fatalf("%s holds %d of the 500 keys written before it joined (%v)", nm.Name, len(r.KVs), err)
	}
	ms := nm.Server().Members()
	if len(ms) != 3 || has(ms, c.IDOf(old)) {
		t.Fatalf("members after the replacement: %+v", ms)
	}
	for _, m := range ms {
		if m.IsLearner {
			t.Fatalf("%x is still a learner", m.ID)
		}
	}
}

// TestUpgradeAndDowngradeInPlace walks the version lifecycle on a quiet cluster: every member
// swapped from 3.6 to 3.7 (the cluster and storage versions follow once the last one is), then
// a downgrade enabled (the cluster version goes back to 3.6 at once, each member's storage with
// it), each member swapped back, and the downgrade finished by the leader.
func TestUpgradeAndDowngradeInPlace(t *testing.T) {
	from, to := version.V3_6, version.V3_7
	c := startCluster(t, from)
	h := NewHistory()
	l := newLifecycle(Path{From: from, To: to, Downgrade: true}, c, h, rand.New(rand.NewSource(1)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitFor := func(what string, ok func(s *etcdserver.Server) bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		defer wcancel()
		if !waitUntil(wctx, c, func() bool {
			for _, m := range c.Members() {
				if s := m.Server(); s == nil || !ok(s) {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("not every member within 20 s: %s", what)
		}
	}
	// As an operator: each step once every member serves and follows one leader; the
	// lifecycle says when it is waiting for the cluster (a version to apply, a member to be
	// ready to downgrade), and the cluster's next change tries again.
	steady := func() bool {
		lead := uint64(0)
		for _, m := range c.Members() {
			s := m.Server()
			if s == nil || s.Leader() == 0 || (lead != 0 && s.Leader() != lead) {
				return false
			}
			select {
			case <-s.ReadyNotify():
			default:
				return false
			}
			lead = s.Leader()
		}
		return true
	}
	var did []string
	var stepErr error
	waitUntil(ctx, c, func() bool {
		if !steady() {
			return false
		}
		step, err := l.advance(ctx)
		if err != nil {
			stepErr = fmt.Errorf("%s: %w", step, err)
			return true
		}
		if step == "" {
			return l.enabled && l.next(to) == nil
		}
		did = append(did, step)
		if len(did) == 3 && l.next(from) == nil { // the last member is at 3.7
			waitFor("cluster and storage at 3.7", func(s *etcdserver.Server) bool {
				return s.ClusterVersion() == to && s.StorageVersion() == to
			})
		}
		return false
	})
	if stepErr != nil {
		t.Fatal(stepErr)
	}
	if len(did) != 7 {
		t.Fatalf("the lifecycle took %d steps, want 3 swaps, the downgrade and 3 swaps back: %v", len(did), did)
	}
	waitFor("cluster and storage back at 3.6, the downgrade finished", func(s *etcdserver.Server) bool {
		return s.ClusterVersion() == from && s.StorageVersion() == from && !s.DowngradeInfo().Enabled && s.Level() == from
	})
	t.Logf("steps: %v", did)
}

// TestFollowerReadsSkipTheHeartbeatRound: on three voters a leader answers a follower's
// forwarded ReadIndex at once (etcdserver/forwardedreads.go), so no heartbeat carries it; the
// leader's own reads go through raft's round. On five voters both do. Each read, on the
// follower and on the leader, must return the write acknowledged just before it.
func TestFollowerReadsSkipTheHeartbeatRound(t *testing.T) {
	for _, tc := range []struct {
		size     int
		answered bool // the follower's reads answered at once
	}{{3, true}, {5, false}} {
		t.Run(fmt.Sprintf("%d voters", tc.size), func(t *testing.T) {
			net := NewNetwork(rand.New(rand.NewSource(1)), Faults{})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := NewCluster(ctx, net, ClusterConfig{Size: tc.size, Dir: t.TempDir(), Level: version.Level{}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			lead := leaderOf(t, c)
			var follower *Member
			for _, m := range c.Up() {
				if m != lead {
					follower = m
					break
				}
			}
			leadID, followerID := c.IDOf(lead), c.IDOf(follower)

			var mu sync.Mutex
			forwarded := map[string]bool{} // contexts of the follower's forwarded reads
			beats := map[string]int{}      // the leader's heartbeats by the read context they carry
			answers := 0
			net.SetTap(func(m raftpb.Message) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case m.Type == raftpb.MsgReadIndex && m.From == followerID && len(m.Entries) == 1:
					forwarded[string(m.Entries[0].Data)] = true
				case m.Type == raftpb.MsgReadIndexResp && m.From == leadID && m.To == followerID:
					answers++
				case m.Type == raftpb.MsgHeartbeat && m.From == leadID && len(m.Context) > 0:
					beats[string(m.Context)]++
				}
			})
			const reads = 20
			for i := 0; i < reads; i++ {
				want := fmt.Sprintf("v%d", i)
				if _, err := lead.Server().Put(ctx, &pb.PutRequest{Key: []byte("k"), Value: []byte(want)}); err != nil {
					t.Fatal(err)
				}
				for _, m := range []*Member{follower, lead} {
					r, err := m.Server().Range(ctx, &pb.RangeRequest{Key: []byte("k")})
					if err != nil {
						t.Fatalf("read %d on %s: %v", i, m.Name, err)
					}
					if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != want {
						t.Fatalf("read %d on %s returned %v, want %s (written before it)", i, m.Name, r.Kvs, want)
					}
				}
			}
			net.SetTap(nil)
			mu.Lock()
			defer mu.Unlock()
			if answers < reads || len(forwarded) < reads {
				t.Fatalf("%d reads forwarded and %d answered, want at least %d of each", len(forwarded), answers, reads)
			}
			followerRounds, leaderRounds := 0, 0
			for ctx := range beats {
				if forwarded[ctx] {
					followerRounds++
				} else {
					leaderRounds++
				}
			}
			if leaderRounds < reads {
				t.Fatalf("raft's round for %d of the leader's %d reads, want each", leaderRounds, reads)
			}
			if tc.answered && followerRounds != 0 {
				t.Fatalf("on %d voters raft's round for %d of the follower's reads, want none", tc.size, followerRounds)
			}
			if !tc.answered && followerRounds < reads {
				t.Fatalf("on %d voters raft's round for %d of the follower's %d reads, want each", tc.size, followerRounds, reads)
			}
		})
	}
}

// TestStalledLeaderIsReplaced: a leader whose disk stops answering (its raft loop held in a WAL
// sync, as with upstream's raftBeforeSave asleep) while clients go on reading from it and from
// the followers must lose its leadership to an election. Nothing it does outside its raft loop
// (answering the followers' forwarded reads, etcdserver/forwardedreads.go) may reset the
// followers' election timers: a build that confirmed the leader's own reads with heartbeats sent
// from its read loop held its replacement off for as long as the stall lasted.
func TestStalledLeaderIsReplaced(t *testing.T) {
	c := startCluster(t, version.Level{})
	old := leaderOf(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := old.Server().Put(ctx, &pb.PutRequest{Key: []byte("k"), Value: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	// The leader's appends are lost from now on: the write below stays uncommitted, so the
	// leader's reads confirm the commit index it already applied and do not wait on the stall.
	oldID := c.IDOf(old)
	c.Net.SetLose(func(m raftpb.Message) bool { return m.From == oldID && m.Type == raftpb.MsgApp })
	old.Disk.Stall()
	t.Cleanup(old.Disk.Resume) // before the cluster's Close, which waits for the raft loop

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var readsOnOld atomic.Int64
	for _, m := range c.Up() {
		wg.Add(1)
		go func(m *Member) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rctx, rcancel := context.WithTimeout(ctx, 100*time.Millisecond)
				m.Server().Range(rctx, &pb.RangeRequest{Key: []byte("k")}) // fails on the stalled leader
				rcancel()
				if m == old {
					readsOnOld.Add(1)
				}
			}
		}(m)
	}
	// A write the leader must put in its WAL: its raft loop stops there.
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	old.Server().Put(wctx, &pb.PutRequest{Key: []byte("k"), Value: []byte("stalled")})
	wcancel()

	// Ten seconds are fifty election timeouts here; the stall lasts until the test resumes it.
	var lead *Member
	ectx, ecancel := context.WithTimeout(ctx, 10*time.Second)
	defer ecancel()
	if !waitUntil(ectx, c, func() bool {
		for _, m := range c.Up() {
			if s := m.Server(); m != old && s != nil && s.Leader() == s.ID() {
				lead = m
				return true
			}
		}
		return false
	}) {
		close(stop)
		wg.Wait()
		t.Fatalf("no member replaced the stalled leader %s within 10 s (%d reads sent to it)", old.Name, readsOnOld.Load())
	}
	// The new leader's write is read back on the other follower while the old leader is stalled.
	if _, err := lead.Server().Put(ctx, &pb.PutRequest{Key: []byte("k"), Value: []byte("after")}); err != nil {
		t.Fatalf("write through the new leader %s: %v", lead.Name, err)
	}
	for _, m := range c.Up() {
		if m == old || m == lead {
			continue
		}
		r, err := m.Server().Range(ctx, &pb.RangeRequest{Key: []byte("k")})
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "after" {
			t.Fatalf("read on %s after the new leader's write: %v %v, want after", m.Name, r, err)
		}
	}
	close(stop)
	wg.Wait()
	if readsOnOld.Load() == 0 {
		t.Fatal("no read reached the stalled leader")
	}
	t.Logf("%s replaced %s; %d reads sent to the stalled leader", lead.Name, old.Name, readsOnOld.Load())
	// Resumed, the old leader follows the new one.
	c.Net.SetLose(nil)
	old.Disk.Resume()
	if !waitUntil(ctx, c, func() bool { return old.Server().Leader() == lead.Server().ID() }) {
		t.Fatalf("the old leader %s never followed %s after its disk resumed", old.Name, lead.Name)
	}
}
