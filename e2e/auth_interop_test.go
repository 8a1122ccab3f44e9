package e2e

import (
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// requireAliceRules checks, against eps, that auth is on and alice may use /a/ and not /x.
func requireAliceRules(t *testing.T, who string, eps []string) {
	t.Helper()
	alice := userClient(t, eps, "alice", "alicepw", nil)
	if _, err := alice.Put(Ctx(t), "/a/"+who, "v"); err != nil {
		t.Errorf("%s: alice writing /a/: %v", who, err)
	}
	_, err := alice.Put(Ctx(t), "/x", "v")
	requireErr(t, who+": alice writing /x", err, rpctypes.ErrGRPCPermissionDenied)
	_, err = userClient(t, eps, "", "", nil).Get(Ctx(t), "/a/1")
	requireErr(t, who+": anonymous read", err, rpctypes.ErrGRPCUserEmpty)
	st, err := userClient(t, eps, "root", "rootpw", nil).AuthStatus(Ctx(t))
	if err != nil || !st.Enabled {
		t.Errorf("%s: auth status %v, %v", who, st, err)
	}
}

// Users, roles and permissions survive a restart, a snapshot restored by etcdutl, and the
// migration of that data down to storage 3.5 (served by our 3.5-level binary and by upstream
// 3.5.35).
func TestAuthSurvivesRestartAndRestore(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	m := NewMember(t)
	m.Start()
	setupAuth(t, userClient(t, []string{m.ClientURL}, "", "", nil))
	requireAliceRules(t, "before restart", []string{m.ClientURL})
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Start()
	requireAliceRules(t, "after restart", []string{m.ClientURL})

	snap := saveSnapshot(t, userClient(t, []string{m.ClientURL}, "root", "rootpw", nil))
	restored := restoreAndServe(t, snap, Binary(t, "etcd"), "")
	requireAliceRules(t, "restored", []string{restored.ClientURL})
	down := restoreAndServe(t, snap, ServerAt(t, OldestLevel), "3.5")
	requireAliceRules(t, "restored at 3.5", []string{down.ClientURL})
	up35 := restoreAndServe(t, snap, UpstreamBinaryAt(t, Upstream35Version, "etcd"), "3.5")
	requireAliceRules(t, "restored at 3.5, upstream 3.5.35", []string{up35.ClientURL})
}

// A data dir with auth moves between upstream 3.7.3 and ours: each enforces what the other
// stored, and users added by one log in on the other.
func TestAuthDataDirInterchange(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	m := NewMember(t)
	m.Start()
	setupAuth(t, userClient(t, []string{m.ClientURL}, "", "", nil))
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Bin = UpstreamBinary(t, "etcd")
	m.Start()
	requireAliceRules(t, "upstream on our data", []string{m.ClientURL})
	root := userClient(t, []string{m.ClientURL}, "root", "rootpw", nil)
	if _, err := root.UserAdd(Ctx(t), "bob", "bobpw"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UserGrantRole(Ctx(t), "bob", "r1"); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Bin = Binary(t, "etcd")
	m.Start()
	requireAliceRules(t, "ours on upstream's data", []string{m.ClientURL})
	if _, err := userClient(t, []string{m.ClientURL}, "bob", "bobpw", nil).Get(Ctx(t), "/a/1"); err != nil {
		t.Errorf("bob, added by upstream, on ours: %v", err)
	}
}

// In a cluster of upstream 3.6.16 members and ours, auth turned on through either side is
// enforced by both, and a simple token from one implementation is accepted by the other.
func TestAuthInMixedCluster(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	up := UpstreamBinary(t, "etcd")
	c.Members[0].Bin = up
	c.Members[2].Bin = up
	c.Start()
	upstreamEP, oursEP := []string{c.Members[0].ClientURL}, []string{c.Members[1].ClientURL}
	setupAuth(t, userClient(t, upstreamEP, "", "", nil))
	requireAliceRules(t, "ours, auth on through upstream", oursEP)
	requireAliceRules(t, "upstream", upstreamEP)
	for _, pair := range [][2]*Member{{c.Members[0], c.Members[1]}, {c.Members[1], c.Members[2]}} {
		tok := login(t, pair[0], "alice", "alicepw")
		if err := getWithToken(t, pair[1], tok, "/a/1"); err != nil {
			t.Errorf("token from %s on %s: %v", pair[0].Name, pair[1].Name, err)
		}
		if err := getWithToken(t, pair[1], tok, "/x"); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("token from %s on %s reading /x: %v", pair[0].Name, pair[1].Name, err)
		}
	}
	// Off through ours, then on again through ours: upstream follows.
	root := userClient(t, oursEP, "root", "rootpw", nil)
	if _, err := root.AuthDisable(Ctx(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, Ctx(t), "anonymous access on upstream", func() bool {
		_, err := userClient(t, upstreamEP, "", "", nil).Put(Ctx(t), "/x", "anyone")
		return err == nil
	})
	if _, err := userClient(t, oursEP, "", "", nil).AuthEnable(Ctx(t)); err != nil {
		t.Fatal(err)
	}
	requireAliceRules(t, "upstream, auth on through ours", upstreamEP)
	// A lease expiring is revoked by the leader as root, whichever implementation leads.
	lease, err := root.Grant(Ctx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Put(Ctx(t), "/a/leased", "v", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, Ctx(t), "the leased key to go", func() bool {
		r, err := root.Get(Ctx(t), "/a/leased")
		return err == nil && len(r.Kvs) == 0
	})
	// Every member applied the same changes.
	r, err := root.Put(Ctx(t), "/a/last", "v")
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[uint32]bool{}
	for _, m := range c.Members {
		waitFor(t, Ctx(t), m.Name+" hashkv", func() bool {
			h, err := root.HashKV(Ctx(t), m.ClientURL, r.Header.Revision)
			if err == nil {
				hashes[h.Hash] = true
			}
			return err == nil
		})
	}
	if len(hashes) != 1 {
		t.Errorf("members disagree: %v", hashes)
	}
}
