package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// hop is one minor of the lifecycle: a cluster of our binaries at level from, upgraded to to
// and downgraded back. Both of upstream's current hops are proven: 3.5 -> 3.6 and 3.6 -> 3.7.
type hop struct{ from, to string }

var hops = []hop{{OldestLevel, LastReleaseLevel}, {LastReleaseLevel, CurrentLevel}}

func (h hop) String() string { return h.from + "-" + h.to }

// storage is what /version reports as the storage version of a member at level (a 3.5 binary
// reports none).
func storageOf(level string) string {
	if level == OldestLevel {
		return ""
	}
	return level + ".0"
}

// eachHop runs f once per hop, as a subtest.
func eachHop(t *testing.T, f func(*testing.T, hop)) {
	for _, h := range hops {
		t.Run(h.String(), func(t *testing.T) { f(t, h) })
	}
}

// clusterAt starts n members of our binary at level.
func clusterAt(t *testing.T, n int, level string, extra ...string) *Cluster {
	c := NewCluster(t, n, extra...)
	for _, m := range c.Members {
		m.Bin = ServerAt(t, level)
	}
	c.Start()
	c.WaitVersions(level+".0", storageOf(level), 10*time.Second)
	return c
}

// swapBinary restarts m (SIGTERM, clean exit) on another binary.
func swapBinary(t *testing.T, m *Member, bin string) {
	t.Helper()
	if err := m.Stop(); err != nil {
		t.Fatalf("stop %s: %v\n%s", m.Name, err, m.LogTail(10))
	}
	m.Bin = bin
	m.Start()
}

// swapAll swaps every member's binary, one member at a time, as an operator would.
func swapAll(t *testing.T, c *Cluster, bin string) {
	t.Helper()
	for _, m := range c.Members {
		time.Sleep(300 * time.Millisecond)
		swapBinary(t, m, bin)
	}
}

func lastReleaseCluster(t *testing.T, n int) *Cluster { return clusterAt(t, n, OldestLevel) }

// metric returns the value line of a Prometheus sample, e.g. `etcd_cluster_version{cluster_version="3.6"}`.
func metricLine(t *testing.T, m *Member, sample string) string {
	t.Helper()
	resp, err := http.Get(m.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, sample+" ") {
			return l
		}
	}
	return ""
}

func TestRollingUpgrade(t *testing.T) { eachHop(t, rollingUpgrade) }

func rollingUpgrade(t *testing.T, h hop) {
	c := clusterAt(t, 3, h.from)
	cl := c.Client()
	stop := make(chan struct{})
	done := make(chan rollingWrites)
	go func() { done <- writeThrough(cl, "upgrade", 4, stop) }()

	for i, m := range c.Members {
		time.Sleep(500 * time.Millisecond)
		swapBinary(t, m, ServerAt(t, h.to))
		v, err := m.Versions()
		if err != nil || v.Server != ReleaseOf(h.to) {
			t.Fatalf("%s after the swap: %+v, %v", m.Name, v, err)
		}
		if i < len(c.Members)-1 {
			// Mixed cluster: once the leader has seen the upgraded members, it keeps the
			// cluster version for the rest, and storage stays.
			c.WaitHeldBy(c.Members[i+1:], 15*time.Second)
			for _, o := range c.Members {
				if v, err := o.Versions(); err != nil || v.Cluster != h.from+".0" || (v.Storage != "" && v.Storage != h.from+".0") {
					t.Fatalf("with %d of 3 members upgraded, %s reports %+v, %v", i+1, o.Name, v, err)
				}
			}
		}
	}
	c.WaitVersions(h.to+".0", h.to+".0", 15*time.Second)
	close(stop)
	w := <-done
	if len(w.failed) > 0 {
		t.Errorf("%d writes failed during the upgrade: %v", len(w.failed), w.failed)
	}
	if len(w.acked) < 100 {
		t.Fatalf("too little load: %d writes", len(w.acked))
	}
	checkAcked(t, cl, "upgrade", w.acked)

	// upstream's event for the raised cluster version
	updatedCluster := regexp.MustCompile(`"msg":"updated cluster version".*"from":"` + regexp.QuoteMeta(h.from) + `","to":"` + regexp.QuoteMeta(h.to) + `"`)
	updated := false
	for _, m := range c.Members {
		updated = updated || updatedCluster.MatchString(m.Log())
		if !m.LogHas(`"msg":"migrated storage version","from":"` + h.from + `","to":"` + h.to + `"`) {
			t.Errorf("%s did not log its storage migration\n%s", m.Name, m.LogTail(20))
		}
		st, err := m.Client().Status(Ctx(t), m.ClientURL)
		if err != nil || st.StorageVersion != h.to+".0" || st.Version != ReleaseOf(h.to) {
			t.Errorf("%s status: %+v, %v", m.Name, st, err)
		}
		if l := metricLine(t, m, `etcd_cluster_version{cluster_version="`+h.to+`"}`); !strings.HasSuffix(l, " 1") {
			t.Errorf("%s: etcd_cluster_version metric %q", m.Name, l)
		}
	}
	if !updated {
		t.Errorf(`no member logged upstream's "updated cluster version" from %s to %s`, h.from, h.to)
	}
	// The first upgraded member ran ahead of the cluster and said so; old members saw a newer peer.
	if want := "the cluster version " + h.from + " is lower than the local etcd version " + ReleaseOf(h.to); !c.Members[0].LogHas(want) {
		t.Errorf("m1 did not warn that it runs ahead of the cluster (%q)\n%s", want, c.Members[0].LogTail(30))
	}
	if want := "the local etcd version " + ReleaseOf(h.from) + " is not up-to-date"; !c.Members[2].LogHas(want) {
		t.Errorf("m3 (still %s while others ran %s) did not warn %q\n%s", h.from, h.to, want, c.Members[2].LogTail(30))
	}
	t.Logf("upgrade: %d acknowledged writes kept", len(w.acked))
}

func TestDowngradeAndUpgradeBack(t *testing.T) { eachHop(t, downgradeAndUpgradeBack) }

// minorAway is the level d minors from level ("3.6", -2 is "3.4").
func minorAway(t *testing.T, level string, d int) string {
	var major, minor int
	if _, err := fmt.Sscanf(level, "%d.%d", &major, &minor); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d.%d", major, minor+d)
}

func downgradeAndUpgradeBack(t *testing.T, h hop) {
	c := clusterAt(t, 3, h.to)
	cl := c.Client()

	for target, want := range map[string]string{
		minorAway(t, h.to, -2): "invalid downgrade target version",
		h.to:                   "invalid downgrade target version",
		minorAway(t, h.to, 1):  "invalid downgrade target version",
		"banana":               "wrong downgrade target version format",
	} {
		if _, err := cl.Downgrade(Ctx(t), clientv3.DowngradeValidate, target); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate %s: %v, want %q", target, err, want)
		}
	}
	if _, err := cl.Downgrade(Ctx(t), clientv3.DowngradeCancel, ""); err == nil || !strings.Contains(err.Error(), "no inflight downgrade job") {
		t.Errorf("cancel without a downgrade: %v", err)
	}
	resp, err := cl.Downgrade(Ctx(t), clientv3.DowngradeValidate, h.from)
	if err != nil || resp.Version != h.to {
		t.Fatalf("validate %s: %+v, %v", h.from, resp, err)
	}

	stop := make(chan struct{})
	done := make(chan rollingWrites)
	go func() { done <- writeThrough(cl, "downgrade", 4, stop) }()

	if _, err := cl.Downgrade(Ctx(t), clientv3.DowngradeEnable, h.from); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Downgrade(Ctx(t), clientv3.DowngradeEnable, h.from); err == nil || !strings.Contains(err.Error(), "downgrade job in progress") {
		t.Errorf("second enable: %v", err)
	}
	c.WaitVersions(h.from+".0", h.from+".0", 15*time.Second)
	for _, m := range c.Members {
		st, err := m.Client().Status(Ctx(t), m.ClientURL)
		if err != nil || st.DowngradeInfo == nil || !st.DowngradeInfo.Enabled || st.DowngradeInfo.TargetVersion != h.from+".0" || st.StorageVersion != h.from+".0" {
			t.Fatalf("%s status during the downgrade: %+v, %v", m.Name, st, err)
		}
		waitLog(t, m, "the member is ready to be downgraded")
	}
	swapAll(t, c, ServerAt(t, h.from))
	waitAnyLog(t, c, "the cluster has been downgraded")
	c.WaitVersions(h.from+".0", storageOf(h.from), 15*time.Second)

	// And back up.
	swapAll(t, c, ServerAt(t, h.to))
	c.WaitVersions(h.to+".0", h.to+".0", 15*time.Second)
	for _, m := range c.Members {
		st, err := m.Client().Status(Ctx(t), m.ClientURL)
		if err != nil || st.DowngradeInfo == nil || st.DowngradeInfo.Enabled {
			t.Fatalf("%s status after upgrading back: %+v, %v", m.Name, st, err)
		}
	}
	close(stop)
	w := <-done
	if len(w.failed) > 0 {
		t.Errorf("%d writes failed during downgrade and upgrade: %v", len(w.failed), w.failed)
	}
	checkAcked(t, cl, "downgrade", w.acked)
	t.Logf("downgrade and upgrade back: %d acknowledged writes kept", len(w.acked))
}

func TestDowngradeCancel(t *testing.T) { eachHop(t, downgradeCancel) }

func downgradeCancel(t *testing.T, h hop) {
	c := clusterAt(t, 3, h.to)
	cl := c.Client()
	back, down := h.to+".0", h.from+".0"

	// Cancel before any binary is swapped: cluster and storage go back.
	if _, err := cl.Downgrade(Ctx(t), clientv3.DowngradeEnable, h.from); err != nil {
		t.Fatal(err)
	}
	c.WaitVersions(down, down, 15*time.Second)
	if _, err := cl.Downgrade(Ctx(t), clientv3.DowngradeCancel, ""); err != nil {
		t.Fatal(err)
	}
	c.WaitVersions(back, back, 15*time.Second)

	// Cancel after one member runs the older binary: the cluster stays down until that member
	// is upgraded.
	if _, err := cl.Downgrade(Ctx(t), clientv3.DowngradeEnable, h.from); err != nil {
		t.Fatal(err)
	}
	c.WaitVersions(down, down, 15*time.Second)
	m := c.Members[1]
	swapBinary(t, m, ServerAt(t, h.from))
	if _, err := cl.Downgrade(Ctx(t), clientv3.DowngradeCancel, ""); err != nil {
		t.Fatal(err)
	}
	c.WaitHeldBy([]*Member{m}, 15*time.Second) // the leader decided: the older member holds it
	for _, o := range c.Members {
		v, err := o.Versions()
		if err != nil || v.Cluster != down {
			t.Fatalf("%s after cancel with a %s member: %+v, %v", o.Name, h.from, v, err)
		}
	}
	swapBinary(t, m, ServerAt(t, h.to))
	c.WaitVersions(back, back, 15*time.Second)
}

// Membership changes work during a downgrade, as upstream (issue 13); what is ours: a new member
// must run the target, and one added but never started does not stall the downgrade.
func TestMembershipDuringDowngrade(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	eachHop(t, membershipDuringDowngrade)
}

func membershipDuringDowngrade(t *testing.T, h hop) {
	c := clusterAt(t, 3, h.to)
	cl := c.Client()
	if _, err := cl.Downgrade(Ctx(t), clientv3.DowngradeEnable, h.from); err != nil {
		t.Fatal(err)
	}
	c.WaitVersions(h.from+".0", h.from+".0", 15*time.Second)

	// A learner added during the downgrade and started with the newer binary is refused.
	m4 := NewMember(t)
	m4.Name = "m4"
	m4.Bin = ServerAt(t, h.to)
	m4.InitialCluster = c.Members[0].InitialCluster + ",m4=" + m4.PeerURL
	m4.Extra = []string{"--initial-cluster-state", "existing"}
	var add *clientv3.MemberAddResponse
	if err := retryUnhealthy(func() (err error) { add, err = cl.MemberAddAsLearner(Ctx(t), []string{m4.PeerURL}); return err }); err != nil {
		t.Fatalf("member add during a downgrade: %v", err)
	}
	if err := m4.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	want := "etcd " + h.to + " is newer than the downgrade target " + h.from
	if code, err := m4.Wait(30 * time.Second); code == 0 || err != nil || !m4.LogHas(want) {
		t.Fatalf("a %s member joining during a downgrade to %s: exit %d, %v\n%s", h.to, h.from, code, err, m4.LogTail(10))
	}
	// With the target's binary it joins, catches up and is promoted; then it is removed again.
	m4.Bin = ServerAt(t, h.from)
	m4.Start()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := cl.MemberPromote(Ctx(t), add.Member.ID)
		if err == nil {
			break
		}
		if !errors.Is(err, rpctypes.ErrMemberLearnerNotReady) || time.Now().After(deadline) {
			t.Fatalf("promote during a downgrade: %v\n%s", err, m4.LogTail(10))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := retryUnhealthy(func() error { _, err := cl.MemberRemove(Ctx(t), add.Member.ID); return err }); err != nil {
		t.Fatalf("member remove during a downgrade: %v", err)
	}
	if code, err := m4.Wait(20 * time.Second); code != 0 || err != nil {
		t.Fatalf("the removed member: exit %d, %v\n%s", code, err, m4.LogTail(10))
	}

	// A voter added and never started: upstream's downgrade would wait for it forever.
	var ghost *clientv3.MemberAddResponse
	if err := retryUnhealthy(func() (err error) {
		ghost, err = cl.MemberAdd(Ctx(t), []string{fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))})
		return err
	}); err != nil {
		t.Fatalf("add a voter during a downgrade: %v", err)
	}
	swapAll(t, c, ServerAt(t, h.from))
	waitAnyLog(t, c, "the downgrade waits for members that still run a newer binary")
	waitAnyLog(t, c, "the cluster has been downgraded")
	c.WaitVersions(h.from+".0", storageOf(h.from), 15*time.Second)
	if _, err := cl.MemberRemove(Ctx(t), ghost.Member.ID); err != nil {
		t.Fatalf("remove the member that never started: %v", err)
	}
}

// retryUnhealthy retries a member change the strict reconfiguration check refuses because a
// peer's stream is younger than upstream's 5 s health interval (a young cluster, a new member).
func retryUnhealthy(change func() error) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := change()
		if !errors.Is(err, rpctypes.ErrUnhealthy) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func waitLog(t *testing.T, m *Member, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !m.LogHas(s) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never logged %q\n%s", m.Name, s, m.LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitAnyLog(t *testing.T, c *Cluster, s string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, m := range c.Members {
			if m.LogHas(s) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no member logged %q", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var _ = context.Background

// Lease checkpoints persist the remaining TTL only once the cluster version reaches 3.6: a 3.6
// cluster keeps a neglected lease running down across a full restart, a 3.5 cluster resets it.
func TestLeaseCheckpointPersistFollowsClusterVersion(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, v := range []struct {
		bin        string
		persisted  bool
		clusterVer string
	}{{"3.6", true, "3.6.0"}, {"3.5", false, "3.5.0"}} {
		t.Run(v.bin, func(t *testing.T) {
			m := NewMember(t, "--lease-checkpoint-interval", "1s", "--experimental-enable-lease-checkpoint")
			m.Bin = ServerAt(t, v.bin)
			m.Start()
			(&Cluster{t: t, Members: []*Member{m}}).WaitVersions(v.clusterVer, map[bool]string{true: "3.6.0", false: ""}[v.persisted], 10*time.Second)
			l, err := m.Client().Grant(Ctx(t), 30)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(6 * time.Second) // several checkpoint rounds
			if err := m.Stop(); err != nil {
				t.Fatal(err)
			}
			m.Start()
			r, err := m.Client().TimeToLive(Ctx(t), l.ID)
			if err != nil {
				t.Fatal(err)
			}
			if v.persisted && r.TTL > 26 {
				t.Fatalf("cluster %s: TTL after restart %d, want the checkpointed remainder (<= 26)", v.clusterVer, r.TTL)
			}
			if !v.persisted && r.TTL < 28 {
				t.Fatalf("cluster %s: TTL after restart %d, want a fresh TTL (3.5 does not persist checkpoints)", v.clusterVer, r.TTL)
			}
		})
	}
}
