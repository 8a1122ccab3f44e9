package e2e

import (
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestForceNewCluster is the disaster-recovery runbook: a three-member cluster loses two
// members for good; the survivor restarts with --force-new-cluster as a one-member cluster with
// every key, the same cluster ID, and takes writes; it keeps doing so when restarted normally.
func TestForceNewCluster(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	cl := c.Client()
	for i := 0; i < 100; i++ {
		if _, err := cl.Put(Ctx(t), fmt.Sprintf("k%03d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	before, err := cl.MemberList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// The survivor is one that has applied every acknowledged write (a member that had not
	// would lose the tail it never committed, on upstream too). Upstream 3.6.16 can lose the
	// last applied write here as well, when kill -9 lands before its buffered WAL commit index
	// reaches the file; ours writes the commit index to the file at once, so it keeps it.
	m := c.Members[0]
	waitApplied(t, m, "k099", "v")
	for _, m := range c.Members {
		m.Kill()
	}
	extra := m.Extra
	m.Extra = append(append([]string(nil), extra...), "--force-new-cluster")
	m.Start()
	if !m.LogHas(`"msg":"forcing restart member"`) {
		t.Fatalf("no forced restart logged:\n%s", m.LogTail(20))
	}
	mc := m.Client()
	ml, err := mc.MemberList(Ctx(t))
	if err != nil || len(ml.Members) != 1 || ml.Members[0].Name != m.Name || ml.Header.ClusterId != before.Header.ClusterId {
		t.Fatalf("after --force-new-cluster: %+v %v (cluster %x before)", ml, err, before.Header.ClusterId)
	}
	r, err := mc.Get(Ctx(t), "k", clientv3.WithPrefix())
	if err != nil || r.Count != 100 {
		t.Fatalf("keys after --force-new-cluster: %v %v", r, err)
	}
	if _, err := mc.Put(Ctx(t), "after", "v"); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Extra = extra
	m.Start()
	if r, err := m.Client().Get(Ctx(t), "after"); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("after a normal restart: %v %v", r, err)
	}
	if ml, err := m.Client().MemberList(Ctx(t)); err != nil || len(ml.Members) != 1 {
		t.Fatalf("members after a normal restart: %+v %v", ml, err)
	}
}
