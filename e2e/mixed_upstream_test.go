package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/pkg/judge"
	"etcdx/upgradelab/cluster"
)

// requireSameHashKV checks every running member holds the same keyspace at the current revision.
func requireSameHashKV(t *testing.T, c *Cluster) {
	t.Helper()
	members := map[string]string{}
	for _, m := range c.Members {
		if m.Running() {
			members[m.Name] = m.ClientURL
		}
	}
	hashesAgree(t, c.Client(), members)
}

// hashesAgree waits until the members (name -> client URL) report the same hash of the keyspace
// at one revision (pkg/judge's hash check), failing with the judge's finding after 30 s: one
// reading can catch a member between a compaction and the next.
func hashesAgree(t *testing.T, c *clientv3.Client, members map[string]string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(Ctx(t), 10*time.Second)
		hs, err := cluster.Hashes(ctx, c, members)
		cancel()
		var findings []judge.Finding
		if err == nil {
			if findings = judge.Hashes(hs); len(findings) == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("members' hashes: %v %v", err, judge.Strings(findings))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// upstreamPeers are the upstream releases our default build (3.7) runs beside in one cluster:
// 3.6.16 (the cluster stays at 3.6) and 3.7.3.
var upstreamPeers = []struct{ release, cluster string }{{Upstream36Version, "3.6"}, {Upstream37Version, "3.7"}}

// A cluster of upstream members (3.6.16, then 3.7.3) and ours: ours is a peer like any other,
// whichever side leads, through leader kills and member changes issued through either
// implementation.
func TestMixedClusterWithUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, p := range upstreamPeers {
		t.Run(p.release, func(t *testing.T) { mixedClusterWithUpstream(t, p.release, p.cluster) })
	}
}

func mixedClusterWithUpstream(t *testing.T, release, clusterVersion string) {
	up := UpstreamBinaryAt(t, release, "etcd")
	c := NewCluster(t, 3, "--snapshot-count", "200")
	c.Members[0].Bin = up
	c.Members[2].Bin = up
	c.Start()
	cl := c.Client()
	for i, m := range c.Members {
		mc := m.Client()
		if _, err := mc.Put(Ctx(t), fmt.Sprintf("via/%d", i), m.Name); err != nil {
			t.Fatalf("put through %s: %v\n%s", m.Name, err, m.LogTail(20))
		}
	}
	requireSameHashKV(t, c)
	// Our member publishes its attributes with an extra field (its version) upstream does not
	// know: the upstream members applied the entry all the same.
	ours := c.Members[1]
	r, err := c.Members[0].Client().MemberList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	published := false
	for _, m := range r.Members {
		if m.Name == ours.Name && len(m.ClientURLs) == 1 && m.ClientURLs[0] == ours.ClientURL {
			published = true
		}
	}
	if !published {
		t.Fatalf("the upstream member does not show our member's published attributes: %v", r.Members)
	}
	// The cluster version is decided whoever leads.
	waitStatus(t, c, "cluster version "+clusterVersion, 20*time.Second, func(cv, _ string) bool { return cv == clusterVersion+".0" })

	// Kill -9 the leader under writes, whichever implementation it runs, three times.
	for round := 0; round < 3; round++ {
		leader := c.Leader(10 * time.Second)
		stop := make(chan struct{})
		done := make(chan map[string]string)
		go func() { done <- writeAcked(t, cl, fmt.Sprintf("kill%d", round), 4, 100000, stop) }()
		time.Sleep(500 * time.Millisecond)
		impl := "ours"
		if leader.Bin == up {
			impl = "upstream"
		}
		t.Logf("round %d: killing leader %s (%s)", round, leader.Name, impl)
		leader.Kill()
		time.Sleep(1500 * time.Millisecond)
		close(stop)
		acked := <-done
		leader.Start()
		checkAcked(t, cl, fmt.Sprintf("kill%d", round), acked)
		requireSameHashKV(t, c)
	}
	if !strings.Contains(c.Members[1].Log(), "established TCP streaming connection with remote peer") {
		t.Fatal("our member logged no stream to its upstream peers")
	}
}

// Member changes in a mixed cluster (with upstream 3.6.16, then 3.7.3): a learner of ours added
// through an upstream member, promoted through ours; an upstream learner added through ours and
// promoted; a member removed.
func TestMixedClusterMembershipChanges(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, p := range upstreamPeers {
		t.Run(p.release, func(t *testing.T) { mixedClusterMembershipChanges(t, p.release) })
	}
}

func mixedClusterMembershipChanges(t *testing.T, release string) {
	up := UpstreamBinaryAt(t, release, "etcd")
	c := NewCluster(t, 2)
	c.Members[0].Bin = up
	c.Start()
	upc, ourc := c.Members[0].Client(), c.Members[1].Client()
	writeN(t, upc, "before", 50)

	join := func(via *clientv3.Client, bin string) *Member {
		n := NewMember(t)
		n.Name = fmt.Sprintf("m%d", len(c.Members)+1)
		n.Bin = bin
		var r *clientv3.MemberAddResponse
		whenHealthy(t, func() (err error) {
			r, err = via.MemberAddAsLearner(Ctx(t), []string{n.PeerURL})
			return err
		})
		var ic []string
		for _, m := range r.Members {
			name := m.Name
			if m.ID == r.Member.ID {
				name = n.Name
			}
			for _, u := range m.PeerURLs {
				ic = append(ic, name+"="+u)
			}
		}
		n.InitialCluster = strings.Join(ic, ",")
		// An upstream member joining reads the member list from the first peer that answers and
		// refuses a list without itself: wait until every member has applied the addition.
		waitPeersList(t, c, len(r.Members))
		n.Extra = []string{"--initial-cluster-state", "existing"}
		n.Start()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err := via.MemberPromote(Ctx(t), r.Member.ID)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("promote %s: %v\n%s", n.Name, err, n.LogTail(20))
			}
			time.Sleep(300 * time.Millisecond)
		}
		c.Members = append(c.Members, n)
		return n
	}
	ours := join(upc, Binary(t, "etcd"))  // ours joins through upstream
	theirs := join(ourc, up)              // upstream joins through ours
	writeN(t, ours.Client(), "after", 50) // writes through the newcomers
	writeN(t, theirs.Client(), "after2", 50)
	requireSameHashKV(t, c)

	// Remove the first upstream member through ours.
	r, err := upc.MemberList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var firstID uint64
	for _, m := range r.Members {
		if m.Name == c.Members[0].Name {
			firstID = m.ID
		}
	}
	whenHealthy(t, func() error {
		_, err := ourc.MemberRemove(Ctx(t), firstID)
		return err
	})
	if _, err := c.Members[0].Wait(15 * time.Second); err != nil {
		t.Fatalf("the removed upstream member kept running: %v", err)
	}
	c.Members = c.Members[1:]
	writeN(t, ourc, "final", 20)
	requireSameHashKV(t, c)
}

// whenHealthy runs a member change until it is no longer refused as "unhealthy cluster": both
// implementations refuse one until every member has been connected for a few seconds.
func whenHealthy(t *testing.T, change func() error) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		err := change()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "unhealthy cluster") || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

// waitPeersList waits until every running member's peer /members lists n members.
func waitPeersList(t *testing.T, c *Cluster, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		all := true
		var counts []string
		for _, m := range c.Members {
			if !m.Running() {
				continue
			}
			resp, err := http.Get(m.PeerURL + "/members")
			if err != nil {
				all = false
				break
			}
			var ms []json.RawMessage
			err = json.NewDecoder(resp.Body).Decode(&ms)
			resp.Body.Close()
			counts = append(counts, fmt.Sprintf("%s:%d", m.Name, len(ms)))
			if err != nil || len(ms) != n {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every member lists %d members: %v", n, counts)
		}
	}
}

// moveLeaderTo makes m the leader.
func moveLeaderTo(t *testing.T, c *Cluster, m *Member) {
	t.Helper()
	st, err := m.Client().Status(Ctx(t), m.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		lead := c.Leader(10 * time.Second)
		if lead == m {
			return
		}
		if _, err := lead.Client().MoveLeader(Ctx(t), st.Header.MemberId); err != nil && time.Now().After(deadline) {
			t.Fatalf("move leader to %s: %v", m.Name, err)
		}
	}
}

// A member that fell too far behind is brought back with a database snapshot, sent by the other
// implementation: upstream's leader to our member, and our leader to an upstream member.
func TestMixedClusterSnapshotCatchUp(t *testing.T) {
	up := UpstreamBinaryAt(t, Upstream36Version, "etcd")
	c := NewCluster(t, 3, "--snapshot-count", "100", "--snapshot-catchup-entries", "100")
	c.Members[0].Bin = up
	c.Members[2].Bin = up
	c.Start()
	for _, tc := range []struct {
		name           string
		leader, lagger *Member
	}{
		{"upstream leader to ours", c.Members[0], c.Members[1]},
		{"our leader to upstream", c.Members[1], c.Members[2]},
	} {
		moveLeaderTo(t, c, tc.leader)
		tc.lagger.Kill()
		live, err := clientv3.New(clientv3.Config{Endpoints: []string{tc.leader.ClientURL}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		prefix := strings.ReplaceAll(tc.name, " ", "-")
		acked := writeAcked(t, live, prefix, 8, 1000, nil)
		live.Close()
		if len(acked) != 1000 {
			t.Fatalf("%s: only %d of 1000 writes acknowledged", tc.name, len(acked))
		}
		tc.lagger.Start()
		requireSameHashKV(t, c)
		checkAcked(t, tc.lagger.Client(), prefix, acked)
		log := tc.lagger.Log()
		if !strings.Contains(log, "received and saved database snapshot") || !strings.Contains(log, "applied snapshot") {
			t.Fatalf("%s: the member caught up without a database snapshot\n%s", tc.name, tc.lagger.LogTail(30))
		}
	}
}

// Lease keep-alives and time-to-live asked of a follower are forwarded to the leader with
// upstream's peer requests, whichever implementation leads and whichever is asked.
func TestMixedClusterLeaseForwarding(t *testing.T) {
	up := UpstreamBinaryAt(t, Upstream36Version, "etcd")
	c := NewCluster(t, 3)
	c.Members[0].Bin = up
	c.Members[2].Bin = up
	c.Start()
	for _, tc := range []struct {
		name          string
		leader, asked *Member
	}{
		{"our follower, upstream leader", c.Members[0], c.Members[1]},
		{"upstream follower, our leader", c.Members[1], c.Members[2]},
	} {
		moveLeaderTo(t, c, tc.leader)
		cl := tc.asked.Client()
		g, err := cl.Grant(Ctx(t), 60)
		if err != nil {
			t.Fatalf("%s: grant: %v", tc.name, err)
		}
		if _, err := cl.Put(Ctx(t), "leased/"+tc.name, "v", clientv3.WithLease(g.ID)); err != nil {
			t.Fatal(err)
		}
		ka, err := cl.KeepAliveOnce(Ctx(t), g.ID)
		if err != nil || ka.TTL <= 0 {
			t.Fatalf("%s: keep-alive through the follower: %+v %v", tc.name, ka, err)
		}
		ttl, err := cl.TimeToLive(Ctx(t), g.ID, clientv3.WithAttachedKeys())
		if err != nil || ttl.GrantedTTL != 60 || len(ttl.Keys) != 1 || string(ttl.Keys[0]) != "leased/"+tc.name {
			t.Fatalf("%s: time-to-live through the follower: %+v %v", tc.name, ttl, err)
		}
		// An unknown lease answers TTL -1, as upstream answers it.
		if r, err := cl.TimeToLive(Ctx(t), 12345); err != nil || r.TTL != -1 {
			t.Fatalf("%s: time-to-live of an unknown lease: %+v %v", tc.name, r, err)
		}
	}
}

// A downgrade in a mixed 3.6 cluster, enabled and cancelled through either implementation,
// then completed: every member's storage follows, whichever implementation it runs.
func TestMixedClusterDowngrade(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	up, up35 := UpstreamBinaryAt(t, Upstream36Version, "etcd"), UpstreamBinaryAt(t, Upstream35Version, "etcd")
	c := NewCluster(t, 3)
	c.Members[0].Bin = up
	c.Members[2].Bin = up
	c.Start()
	writeN(t, c.Client(), "before", 20)
	waitStatus(t, c, "cluster version 3.6", 20*time.Second, func(cv, s string) bool { return cv == "3.6.0" && s == "3.6.0" })
	upc, ourc := c.Members[0].Client(), c.Members[1].Client()

	// Enabled through ours, cancelled through upstream: storage goes down, then back up.
	if _, err := ourc.Downgrade(Ctx(t), clientv3.DowngradeEnable, "3.5"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, "storage version 3.5", 30*time.Second, func(cv, s string) bool { return cv == "3.5.0" && s == "3.5.0" })
	if _, err := upc.Downgrade(Ctx(t), clientv3.DowngradeCancel, ""); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, "cluster version 3.6 again", 30*time.Second, func(cv, s string) bool { return cv == "3.6.0" && s == "3.6.0" })

	// Enabled through upstream, completed by swapping every member to upstream 3.5.35.
	if _, err := upc.Downgrade(Ctx(t), clientv3.DowngradeEnable, "3.5"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, "storage version 3.5", 30*time.Second, func(cv, s string) bool { return cv == "3.5.0" && s == "3.5.0" })
	for _, m := range c.Members {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		m.Bin = up35
		m.Start()
	}
	writeN(t, c.Client(), "after", 20)
	requireSameHashKV(t, c)
	r, err := c.Client().Get(Ctx(t), "before/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 20 {
		t.Fatalf("keys written before the downgrade: %+v %v", r, err)
	}
}

// Linearizable reads in a mixed cluster of three, whoever leads (upstream 3.6.16, then 3.7.3,
// beside ours): each read, on any member, returns the write acknowledged just before it. With
// ours leading, a read on an upstream follower is answered at once (etcdserver/forwardedreads.go);
// with upstream leading, ours forwards its reads to it as raft does.
func TestMixedClusterReadsSeeTheWriteBefore(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, p := range upstreamPeers {
		t.Run(p.release, func(t *testing.T) {
			up := UpstreamBinaryAt(t, p.release, "etcd")
			c := NewCluster(t, 3)
			c.Members[0].Bin = up
			c.Members[2].Bin = up
			c.Start()
			for _, lead := range []*Member{c.Members[1], c.Members[0]} {
				moveLeaderTo(t, c, lead)
				for i := 0; i < 30; i++ {
					want := fmt.Sprintf("%s/%d", lead.Name, i)
					if _, err := c.Members[i%3].Client().Put(Ctx(t), "k", want); err != nil {
						t.Fatalf("put through %s: %v", c.Members[i%3].Name, err)
					}
					for _, m := range c.Members {
						r, err := m.Client().Get(Ctx(t), "k")
						if err != nil {
							t.Fatalf("read on %s (%s leads): %v\n%s", m.Name, lead.Name, err, m.LogTail(20))
						}
						if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != want {
							t.Fatalf("read on %s (%s leads) returned %v, want %s (written before it)", m.Name, lead.Name, r.Kvs, want)
						}
					}
				}
			}
		})
	}
}
