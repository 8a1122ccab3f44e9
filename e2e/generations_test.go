package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/upgradelab/cluster"
)

// impl is one member's binary on the path: ours at a level, or upstream's release of that line.
type impl struct {
	upstream bool
	level    string
}

func (i impl) bin(t *testing.T) string {
	if i.upstream {
		return UpstreamBinaryAt(t, "v"+ReleaseOf(i.level), "etcd")
	}
	return ServerAt(t, i.level)
}

func (i impl) String() string {
	if i.upstream {
		return "upstream " + ReleaseOf(i.level)
	}
	return "ours " + i.level
}

// alternating is the binary member k runs at level on the path: ours and upstream's in turn,
// starting with the other side at each stop, so every member changes implementation as well as
// version at every swap.
func alternating(level string, k, stop int) impl {
	return impl{upstream: (k+stop)%2 == 0, level: level}
}

// TestThreeGenerationsAlternating takes one three-member cluster from 3.5 to 3.7 and back to 3.5,
// one minor and one member at a time, with ours and upstream's current releases (3.5.35, 3.6.16,
// 3.7.3) alternating on every member: each swap changes a member's implementation too, so the
// path holds 3.6.16 -> ours 3.7 -> downgrade -> 3.6.16 in place and ours 3.6 -> upstream 3.7.3 ->
// ours 3.6. A writing and reading load runs throughout: no acknowledged write may be lost, and
// every member's hashkv is equal after every swap.
func TestThreeGenerationsAlternating(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3, "--snapshot-count", "300")
	for k, m := range c.Members {
		m.Bin = alternating(OldestLevel, k, 0).bin(t)
	}
	c.Start()
	waitStatus(t, c, "cluster version 3.5", 20*time.Second, func(v, _ string) bool { return v == "3.5.0" })
	fillKeyspace(t, c.Client())
	load := startSteadyLoad(t, c, "gens", 4)

	var phases []phase
	swapTo := func(level string, stop int) {
		t.Helper()
		for k, m := range c.Members {
			next := alternating(level, k, stop)
			began := time.Now()
			if err := m.Stop(); err != nil {
				t.Fatalf("stop %s: %v\n%s", m.Name, err, m.LogTail(20))
			}
			m.Bin = next.bin(t)
			m.Start()
			phases = append(phases, phase{member: m.Name, impl: map[bool]string{true: "upstream", false: "ours"}[next.upstream],
				what: "swap to " + next.String(), from: began, to: time.Now()})
			requireSameHashKV(t, c)
			t.Logf("%s now runs %s", m.Name, next)
		}
	}
	versions := func(what, cluster, storage string) {
		t.Helper()
		waitStatus(t, c, what, 30*time.Second, func(v, s string) bool { return v == cluster && (storage == "*" || s == storage) })
		requireSameHashKV(t, c)
	}
	downgrade := func(through *Member, target string) {
		t.Helper()
		if _, err := through.Client().Downgrade(Ctx(t), clientv3.DowngradeEnable, target); err != nil {
			t.Fatalf("downgrade enable %s through %s (%s): %v", target, through.Name, through.Bin, err)
		}
	}

	swapTo(LastReleaseLevel, 1)
	versions("cluster and storage 3.6", "3.6.0", "3.6.0")
	// Upstream 3.7.3 panics replaying the v2 requests the 3.5.35 members left in their WALs
	// (TestV2EntriesOf35ReplayedAt37): as an operator must, wait until a snapshot passed them.
	waitEverySnapshotSaved(t, c)
	swapTo(CurrentLevel, 2)
	versions("cluster and storage 3.7", "3.7.0", "3.7.0")

	downgrade(c.Members[0], LastReleaseLevel) // through whichever implementation m1 runs now
	versions("cluster and storage back to 3.6", "3.6.0", "3.6.0")
	swapTo(LastReleaseLevel, 3)
	versions("cluster 3.6 with 3.6 binaries", "3.6.0", "3.6.0")
	waitDowngradeDone(t, c)

	downgrade(c.Members[1], OldestLevel) // through the other implementation
	versions("cluster and storage back to 3.5", "3.5.0", "*")
	swapTo(OldestLevel, 4)
	versions("cluster 3.5 with 3.5 binaries", "3.5.0", "*")

	acked := load.end()
	checkAcked(t, c.Client(), "gens", acked)
	failed := blame(load.failed, phases)
	t.Logf("%d acknowledged writes kept over 12 swaps and two downgrades; failed requests: ours %d, upstream %d, no member change %d",
		len(acked), len(failed["ours"]), len(failed["upstream"]), len(failed["no member change"]))
	if len(acked) < 200 {
		t.Fatalf("too little load: %d acknowledged writes", len(acked))
	}
}

// waitEverySnapshotSaved waits until every member has saved a raft snapshot since it is called
// (the count of etcd_debugging_snap_save_total_duration_seconds rose), overwriting one key to
// make entries meanwhile: what the lab's snapshot step and the guide do before upstream 3.7.
func waitEverySnapshotSaved(t *testing.T, c *Cluster) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	marks := make([]cluster.Metrics, len(c.Members))
	for i, m := range c.Members {
		mt, err := cluster.GetMetrics(Ctx(t), hc, m.MetricsURL)
		if err != nil {
			t.Fatalf("metrics of %s: %v", m.Name, err)
		}
		marks[i] = mt
	}
	deadline := time.Now().Add(60 * time.Second)
	for n := 0; ; n++ {
		if n%50 == 0 {
			waiting := []string{}
			for i, m := range c.Members {
				mt, err := cluster.GetMetrics(Ctx(t), hc, m.MetricsURL)
				if err != nil || !mt.SavedSnapshotSince(marks[i]) {
					waiting = append(waiting, m.Name)
				}
			}
			if len(waiting) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no snapshot saved by %v within a minute (%d filler writes)", waiting, n)
			}
		}
		if _, err := c.Client().Put(Ctx(t), "snapshot-filler", fmt.Sprint(n)); err != nil {
			t.Fatalf("filler write: %v", err)
		}
	}
}

// waitDowngradeDone waits until every member reports no downgrade in progress.
func waitDowngradeDone(t *testing.T, c *Cluster) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range c.Members {
		for {
			st, err := m.Client().Status(Ctx(t), m.ClientURL)
			if err == nil && (st.DowngradeInfo == nil || !st.DowngradeInfo.Enabled) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still reports a downgrade in progress: %+v, %v", m.Name, st, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// TestSkipVersionJoinRefused: a member two minors away from the cluster version is refused when
// it joins, ours and upstream's alike: a 3.7 member into a 3.5 cluster, a 3.5 member into a 3.7
// cluster. Upstream 3.7.3 is refused at every peer handshake ("incompatible version") and keeps
// retrying; upstream 3.5.35 exits ("incompatible with current running cluster"); ours exits at
// once in both, saying why and what to do.
func TestSkipVersionJoinRefused(t *testing.T) {
	for _, c := range []struct {
		cluster, joiner string
		want            string // ours says
		upstreamStays   bool   // upstream's joiner stays up, refused at every peer handshake
		upstreamSays    string
	}{
		{OldestLevel, CurrentLevel, "cannot join the cluster: etcd 3.7 is more than one minor version newer than the cluster version 3.5: upgrade one minor version at a time (every member to 3.6 first)",
			true, "incompatible version"},
		{CurrentLevel, OldestLevel, "cannot join the cluster: etcd 3.5 is older than the cluster version 3.7",
			false, "incompatible with current running cluster"},
	} {
		t.Run(c.joiner+" into "+c.cluster, func(t *testing.T) {
			cl := clusterAt(t, 1, c.cluster)
			first := cl.Members[0]
			for _, joiner := range []impl{{upstream: false, level: c.joiner}, {upstream: true, level: c.joiner}} {
				n := NewMember(t)
				n.Name = "m2"
				n.Bin = joiner.bin(t)
				// A learner: the member that never starts does not count towards the quorum.
				add, err := first.Client().MemberAddAsLearner(Ctx(t), []string{n.PeerURL})
				if err != nil {
					t.Fatal(err)
				}
				n.InitialCluster = first.Name + "=" + first.PeerURL + "," + n.Name + "=" + n.PeerURL
				n.Extra = []string{"--initial-cluster-state", "existing"}
				if err := n.StartNoWait(); err != nil {
					t.Fatal(err)
				}
				if joiner.upstream && c.upstreamStays {
					// Refused at the peer handshake, upstream's joiner stays up, retrying.
					deadline := time.Now().Add(20 * time.Second)
					for !strings.Contains(n.Log(), c.upstreamSays) {
						if time.Now().After(deadline) || !n.Running() {
							t.Fatalf("%s joining a %s cluster was not refused for its version\n%s", joiner, c.cluster, n.LogTail(60))
						}
						time.Sleep(200 * time.Millisecond)
					}
					if n.WaitHealthy(2*time.Second) == nil {
						t.Fatalf("%s joined a %s cluster", joiner, c.cluster)
					}
					n.Kill()
				} else {
					// Ours stops at once and says why and what to do; so does upstream, here.
					want := c.want
					if joiner.upstream {
						want = c.upstreamSays
					}
					code, err := n.Wait(30 * time.Second)
					if err != nil || code == 0 || !n.LogHas(want) {
						t.Fatalf("%s joining a %s cluster: exit %d, %v; want a refusal saying %q\n%s", joiner, c.cluster, code, err, want, n.LogTail(40))
					}
				}
				if _, err := first.Client().MemberRemove(Ctx(t), add.Member.ID); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestV2EntriesOf35ReplayedAt37: upstream 3.5 publishes a member's name and client URLs through
// the v2 API every time it starts, as a bare etcdserverpb.Request entry. Upstream 3.6 still
// decodes such entries; upstream 3.7.3 does not, and panics (`unmarshal should never fail`)
// replaying a WAL that still holds one: a member taken 3.5 -> 3.6 -> 3.7 before a raft snapshot
// passed them (fewer than --snapshot-count entries, 10,000 by default, since a 3.5 member last
// started). Ours at 3.7 starts.
func TestV2EntriesOf35ReplayedAt37(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	m := NewMember(t)
	m.Bin = UpstreamBinaryAt(t, Upstream35Version, "etcd")
	m.Start()
	writeN(t, m.Client(), "v35", 20)
	time.Sleep(2 * time.Second) // several SYNC entries
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Bin = ServerAt(t, LastReleaseLevel)
	m.Start()
	(&Cluster{t: t, Members: []*Member{m}}).WaitVersions("3.6.0", "3.6.0", 10*time.Second)
	writeN(t, m.Client(), "v36", 20)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}

	// Upstream 3.7.3 on a copy of the data dir.
	up := NewMember(t)
	up.Name, up.PeerURL, up.InitialCluster = m.Name, m.PeerURL, m.InitialCluster
	up.Bin = UpstreamBinaryAt(t, Upstream37Version, "etcd")
	if out, err := exec.Command("cp", "-a", m.DataDir+"/.", up.DataDir).CombinedOutput(); err != nil {
		t.Fatalf("copy the data dir: %v\n%s", err, out)
	}
	if err := up.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	if code, err := up.Wait(30 * time.Second); err != nil || code == 0 || !up.LogHas("unmarshal should never fail") {
		t.Errorf("upstream 3.7.3 on a data dir with 3.5's v2 entries: exit %d, %v (it panicked replaying them when this test was written)\n%s", code, err, up.LogTail(10))
	}

	// Ours at 3.7 on the original.
	m.Bin = ServerAt(t, CurrentLevel)
	m.Start()
	(&Cluster{t: t, Members: []*Member{m}}).WaitVersions("3.7.0", "3.7.0", 10*time.Second)
	if countPrefix(t, m, "v35") != 20 || countPrefix(t, m, "v36") != 20 {
		t.Fatal("keys missing at 3.7")
	}
	if m.LogHas("skipping undecodable raft entry") {
		t.Errorf("ours called 3.5's v2 entries undecodable\n%s", m.LogTail(20))
	}
}

// TestUpstream35MemberPublishesToOurs: an upstream 3.5 member publishes its name and client URLs
// through the v2 API when it starts (a bare v2 request in the log). Ours, in the same cluster,
// applies it as upstream 3.6 does, so a member added and started on upstream 3.5.35 is listed
// by its name through our member.
func TestUpstream35MemberPublishesToOurs(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	up35 := UpstreamBinaryAt(t, Upstream35Version, "etcd")
	c := NewCluster(t, 2)
	c.Members[0].Bin = ServerAt(t, LastReleaseLevel)
	c.Members[1].Bin = up35
	c.Start()
	ours := c.Members[0]
	n := NewMember(t)
	n.Name = "m3"
	n.Bin = up35
	n.InitialCluster = ours.InitialCluster + ",m3=" + n.PeerURL
	n.Extra = []string{"--initial-cluster-state", "existing"}
	if err := retryUnhealthy(func() error { _, err := ours.Client().MemberAdd(Ctx(t), []string{n.PeerURL}); return err }); err != nil {
		t.Fatal(err)
	}
	n.Start()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := ours.Client().MemberList(Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		named := false
		for _, m := range r.Members {
			if m.Name == "m3" && len(m.ClientURLs) == 1 && m.ClientURLs[0] == n.ClientURL {
				named = true
			}
		}
		if named {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("our member lists %v: the upstream 3.5 member's published attributes are missing\n%s", r.Members, ours.LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ours.LogHas("skipping undecodable raft entry") || ours.LogHas("does not apply") {
		t.Errorf("our member skipped an entry of upstream 3.5\n%s", ours.LogTail(20))
	}
}

// TestUndecidedClusterVersionFrom35: upstream 3.5's leader records cluster version 3.0 (its
// minimum) until it has read every member's version, so a 3.5 cluster with a member down keeps
// 3.0 in every data dir. A member stopped there and started on ours at 3.6 starts and serves
// (upstream 3.6 does; ours refused, calling 3.6 two minors newer than "3.0"), while ours at 3.7
// is refused, the data's storage version (3.5) standing for the undecided cluster version; once
// the third member starts, the cluster settles at 3.5.
func TestUndecidedClusterVersionFrom35(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	up35 := UpstreamBinaryAt(t, Upstream35Version, "etcd")
	for _, m := range c.Members {
		m.Bin = up35
	}
	m1, m2, m3 := c.Members[0], c.Members[1], c.Members[2]
	for _, m := range []*Member{m1, m2} {
		if err := m.StartNoWait(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []*Member{m1, m2} {
		if err := m.WaitHealthy(30 * time.Second); err != nil {
			t.Fatalf("%s: %v\n%s", m.Name, err, m.LogTail(20))
		}
	}
	writeN(t, m1.Client(), "undecided", 10)
	if v, err := clusterVersionOf(m1); err != nil || v != "3.0.0" {
		t.Fatalf("with m3 never started, upstream 3.5.35 reports cluster version %q (%v), want 3.0.0", v, err)
	}
	if err := m1.Stop(); err != nil {
		t.Fatal(err)
	}

	m1.Bin = ServerAt(t, CurrentLevel)
	startRefused(t, m1, "more than one minor version newer than the cluster version 3.5")

	// Upstream 3.6.16 first, then ours at 3.6: both start and serve (the version stays 3.0).
	startsAndServes := func(bin string) {
		t.Helper()
		m1.Bin = bin
		m1.Start()
		if n := countPrefix(t, m1, "undecided"); n != 10 {
			t.Fatalf("%s serves %d of the 10 keys", bin, n)
		}
		if v, err := clusterVersionOf(m1); err != nil || v != "3.0.0" {
			t.Fatalf("%s: cluster version %q (%v), want 3.0.0 while m3 is down", bin, v, err)
		}
	}
	startsAndServes(UpstreamBinaryAt(t, Upstream36Version, "etcd"))
	if err := m1.Stop(); err != nil {
		t.Fatal(err)
	}
	startsAndServes(ServerAt(t, LastReleaseLevel))
	m3.Start()
	waitStatus(t, c, "cluster version 3.5 once every member is up", 30*time.Second, func(v, _ string) bool { return v == "3.5.0" })
}
