package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startRefused starts m and expects it to exit 1 with every one of msgs in its log.
func startRefused(t *testing.T, m *Member, msgs ...string) {
	t.Helper()
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	code, err := m.Wait(15 * time.Second)
	if err != nil || code != 1 {
		m.Kill()
		t.Fatalf("%s (%s): exit %d, %v; want a refusal with exit 1\n%s", m.Name, m.Bin, code, err, m.LogTail(20))
	}
	for _, s := range msgs {
		if !m.LogHas(s) {
			t.Fatalf("%s refused without saying %q\n%s", m.Name, s, m.LogTail(20))
		}
	}
}

func TestOlderBinaryRefusesNewerData(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	eachHop(t, olderBinaryRefusesNewerData)
}

func olderBinaryRefusesNewerData(t *testing.T, h hop) {
	m := clusterAt(t, 1, h.to).Members[0]
	if _, err := m.Client().Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Bin = ServerAt(t, h.from)
	startRefused(t, m, "has storage version "+h.to+", newer than this etcd "+ReleaseOf(h.from), "etcdutl migrate --data-dir "+m.DataDir+" --target-version "+h.from)
	// Nothing was touched: the right binary still serves the data.
	m.Bin = ServerAt(t, h.to)
	m.Start()
	if r, err := m.Client().Get(Ctx(t), "k"); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("data after the refused start: %v, %v", r, err)
	}
}

func TestOlderBinaryRefusedWhenJoining(t *testing.T) { eachHop(t, olderBinaryRefusedWhenJoining) }

func olderBinaryRefusedWhenJoining(t *testing.T, h hop) {
	m := clusterAt(t, 1, h.to).Members[0]
	n := NewMember(t)
	n.Name = "m2"
	n.Bin = ServerAt(t, h.from)
	if _, err := m.Client().MemberAdd(Ctx(t), []string{n.PeerURL}); err != nil {
		t.Fatal(err)
	}
	n.InitialCluster = m.Name + "=" + m.PeerURL + "," + n.Name + "=" + n.PeerURL
	n.Extra = []string{"--initial-cluster-state", "existing"}
	startRefused(t, n, "cannot join the cluster: etcd "+h.from+" is older than the cluster version "+h.to, "enable a downgrade to "+h.from)
}

func TestSkipVersionUpgradeRefused(t *testing.T) {
	c := lastReleaseCluster(t, 1)
	m := c.Members[0]
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Bin = ServerAt(t, "3.7")
	startRefused(t, m, "etcd 3.7 is more than one minor version newer than the cluster version 3.5", "every member to 3.6 first")
	// One minor at a time works, and the 3.5 data is still good for it.
	m.Bin = ServerAt(t, "3.6")
	m.Start()
	c.WaitVersions("3.6.0", "3.6.0", 10*time.Second)
}

func TestPeersMoreThanOneMinorApartRefuseEachOther(t *testing.T) {
	c := NewCluster(t, 2)
	c.Members[0].Bin = ServerAt(t, "3.5")
	c.Members[1].Bin = ServerAt(t, "3.7")
	startRefusingPeers(t, c,
		[]string{"failed version compatibility check", "peer version 3.7.3 is more than one minor version away from the local version 3.5.35"},
		[]string{"request sent was ignored by remote peer", "incompatible version", `"remote-peer-version":"3.5.35"`, `"local-version":"3.7.3"`})
}

// startRefusingPeers starts two members that must refuse each other: it waits until the first
// member's log holds every line of first and the second's every line of second, then checks that
// they formed no quorum.
func startRefusingPeers(t *testing.T, c *Cluster, first, second []string) {
	t.Helper()
	for _, m := range c.Members {
		if err := m.StartNoWait(); err != nil {
			t.Fatal(err)
		}
	}
	has := func(log string, want []string) bool {
		for _, w := range want {
			if !strings.Contains(log, w) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	for !has(c.Members[0].Log(), first) || !has(c.Members[1].Log(), second) {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged on both sides\n--- m1 ---\n%s\n--- m2 ---\n%s", c.Members[0].LogTail(20), c.Members[1].LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := c.Members[0].WaitHealthy(2 * time.Second); err == nil {
		t.Fatal("members that refuse each other formed a quorum")
	}
}

// A peer URL where something other than etcd answers is reported as such, not left to look like
// a slow peer.
func TestPeerThatSpeaksNoEtcdIsReported(t *testing.T) {
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "nginx")
		http.NotFound(w, r)
	}))
	defer foreign.Close()
	c := NewCluster(t, 2)
	c.Members[1].PeerURL = foreign.URL
	var ic []string
	for _, m := range c.Members {
		ic = append(ic, m.Name+"="+m.PeerURL)
	}
	m := c.Members[0]
	m.InitialCluster = strings.Join(ic, ",")
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	defer m.Kill() // before the foreign server closes: it waits for open requests
	deadline := time.Now().Add(10 * time.Second)
	for !m.LogHas("peer URL does not answer as an etcd member") {
		if time.Now().After(deadline) {
			t.Fatalf("no report of the foreign peer\n%s", m.LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !m.LogHas(`answered by \"nginx\" without etcd's headers`) {
		t.Fatalf("the report does not say what answered\n%s", m.LogTail(20))
	}
}

// TestRebootstrapOfAServedMemberRefusedAsUpstream: a member whose data dir was lost, started
// again with --initial-cluster-state=new, finds from its peers that it has already served in
// their cluster and refuses to bootstrap a new one, with upstream's words and exit status (ours
// and upstream 3.7.3 and 3.5.35, each in a cluster of its own kind). Ours used to bootstrap it,
// as a member with an empty log in a cluster that had moved on.
func TestRebootstrapOfAServedMemberRefusedAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, c := range []struct{ name, bin string }{
		{"upstream 3.7", UpstreamBinaryAt(t, Upstream37Version, "etcd")},
		{"ours 3.7", ServerAt(t, CurrentLevel)},
		{"upstream 3.5", UpstreamBinaryAt(t, Upstream35Version, "etcd")},
		{"ours 3.5", ServerAt(t, OldestLevel)},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := NewCluster(t, 2)
			for _, m := range cl.Members {
				m.Bin = c.bin
			}
			cl.Start()
			m2 := cl.Members[1]
			id, err := m2.Client().MemberList(Ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			var self uint64
			for _, m := range id.Members {
				if m.Name == m2.Name {
					self = m.ID
				}
			}
			if err := m2.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(m2.DataDir); err != nil {
				t.Fatal(err)
			}
			code, out := runEtcdBin(t, c.bin, nil, m2.Args()...)
			want := fmt.Sprintf("member %x has already been bootstrapped", self)
			if code != 1 || !strings.Contains(out, want) {
				t.Fatalf("exit %d, want 1 and %q in:\n%s", code, want, out)
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, want) {
					t.Logf("%s", l)
				}
			}
			if _, err := os.Stat(filepath.Join(m2.DataDir, "member", "wal")); err == nil {
				t.Errorf("a WAL was created by the refused start")
			}
		})
	}
}
