package e2e

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// corruptValue rewrites, in a stopped member's bbolt file, every stored value holding old
// with new (same length), as a bit rot inside a value would.
func corruptValue(t *testing.T, dataDir, old, new string) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dataDir, "member", "snap", "db"), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	changed := 0
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		type kv struct{ k, v []byte }
		var edits []kv
		b.ForEach(func(k, v []byte) error {
			if bytes.Contains(v, []byte(old)) {
				edits = append(edits, kv{append([]byte(nil), k...), bytes.ReplaceAll(v, []byte(old), []byte(new))})
			}
			return nil
		})
		for _, e := range edits {
			if err := b.Put(e.k, e.v); err != nil {
				return err
			}
			changed++
		}
		return nil
	})
	if err != nil || changed == 0 {
		t.Fatalf("corrupt %s: %d values changed, %v", dataDir, changed, err)
	}
}

// TestInitialCorruptCheck: with the InitialCorruptCheck gate (kubeadm's manifests set it), a member restarting with data that differs from its peers' refuses to start, as
// upstream; with the same data it starts after logging that the check passed.
func TestInitialCorruptCheck(t *testing.T) {
	c := NewCluster(t, 3, "--feature-gates=InitialCorruptCheck=true")
	c.Start()
	cl := c.Client()
	if _, err := cl.Put(Ctx(t), "k", "precious-value"); err != nil {
		t.Fatal(err)
	}
	m := c.Members[2]
	waitApplied(t, m, "k", "precious-value")
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Start()
	if !m.LogHas("initial corruption checking passed; no corruption") {
		t.Fatalf("healthy restart did not run the check:\n%s", m.LogTail(20))
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	corruptValue(t, m.DataDir, "precious-value", "PRECIOUS-VALUE")
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	code, err := m.Wait(30 * time.Second)
	if err != nil {
		t.Fatalf("the corrupted member kept running: %v\n%s", err, m.LogTail(20))
	}
	log := m.Log()
	if code != 1 || !strings.Contains(log, "found different hash values from remote peer") ||
		!strings.Contains(log, "found data inconsistency with peers") {
		t.Fatalf("corrupted member: exit %d\n%s", code, m.LogTail(20))
	}
	// The healthy members still serve.
	if _, err := cl.Put(Ctx(t), "k2", "v"); err != nil {
		t.Fatal(err)
	}
}

// TestPeriodicCorruptCheckRaisesAlarm: with --corrupt-check-time the leader compares hashes
// with the other members; a member whose copy of a value was damaged while it was down gets
// the CORRUPT alarm, after which the cluster refuses writes with upstream's error and still
// serves reads.
func TestPeriodicCorruptCheckRaisesAlarm(t *testing.T) {
	c := NewCluster(t, 3, "--corrupt-check-time", "500ms")
	c.Start()
	cl := c.Client()
	if _, err := cl.Put(Ctx(t), "k", "precious-value"); err != nil {
		t.Fatal(err)
	}
	m := c.Members[2]
	waitApplied(t, m, "k", "precious-value")
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	corruptValue(t, m.DataDir, "precious-value", "PRECIOUS-VALUE")
	// Not waited healthy: the leader's check may raise the alarm before the member's first
	// /health, which then answers 503 for good.
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	var alarms *clientv3.AlarmResponse
	for i := 0; i < 150; i++ {
		var err error
		if alarms, err = cl.AlarmList(Ctx(t)); err == nil && len(alarms.Alarms) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if alarms == nil || len(alarms.Alarms) != 1 || alarms.Alarms[0].Alarm.String() != "CORRUPT" {
		t.Fatalf("no CORRUPT alarm: %+v", alarms)
	}
	if _, err := cl.Put(Ctx(t), "k2", "v"); err == nil || !strings.Contains(err.Error(), "etcdserver: corrupt cluster") {
		t.Fatalf("a write on a corrupt cluster: %v", err)
	}
	if r, err := cl.Get(Ctx(t), "k"); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("a read on a corrupt cluster: %+v %v", r, err)
	}
	leader := c.Leader(10 * time.Second)
	if !leader.LogHas("same compact revision then hashes must match") {
		t.Fatalf("the leader did not say why:\n%s", leader.LogTail(20))
	}
}

// TestCompactHashCheck: with the CompactHashCheck gate the leader compares the hash of the
// latest compacted revision across members; the member whose copy differs gets the CORRUPT
// alarm (the other two agree), as upstream.
func TestCompactHashCheck(t *testing.T) {
	c := NewCluster(t, 3, "--feature-gates=CompactHashCheck=true", "--compact-hash-check-time", "300ms")
	c.Start()
	cl := c.Client()
	for i := 0; i < 10; i++ {
		if _, err := cl.Put(Ctx(t), "k", fmt.Sprintf("precious-value-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	leader := c.Leader(10 * time.Second)
	var m *Member
	for _, x := range c.Members {
		if x != leader {
			m = x
		}
	}
	waitApplied(t, m, "k", "precious-value-9")
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	corruptValue(t, m.DataDir, "precious-value-9", "PRECIOUS-VALUE-9")
	m.Start()
	resp, err := cl.Get(Ctx(t), "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Compact(Ctx(t), resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	ml, _ := cl.MemberList(Ctx(t))
	var mid uint64
	for _, x := range ml.Members {
		if x.Name == m.Name {
			mid = x.ID
		}
	}
	for i := 0; ; i++ {
		a, err := cl.AlarmList(Ctx(t))
		if err == nil && len(a.Alarms) == 1 && a.Alarms[0].Alarm.String() == "CORRUPT" && a.Alarms[0].MemberID == mid {
			break
		}
		if i == 150 {
			t.Fatalf("no CORRUPT alarm for %s (%x): %+v %v\n%s", m.Name, mid, a, err, c.Leader(time.Second).LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !c.Leader(5 * time.Second).LogHas("Detected compaction hash mismatch") {
		t.Fatal("the leader did not log the mismatch")
	}
}

// waitApplied waits until m itself (a serializable read) has applied key=value.
func waitApplied(t *testing.T, m *Member, key, value string) {
	t.Helper()
	waitServes(t, m.Client(), m.Name, key, value)
}

// waitServes waits until the member behind c serves key=value from its own store
// (a serializable read), i.e. it has applied the write.
func waitServes(t *testing.T, c *clientv3.Client, name, key, value string) {
	t.Helper()
	for i := 0; ; i++ {
		r, err := c.Get(Ctx(t), key, clientv3.WithSerializable())
		if err == nil && len(r.Kvs) == 1 && string(r.Kvs[0].Value) == value {
			return
		}
		if i == 100 {
			t.Fatalf("member %s never applied %s=%s: %v", name, key, value, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
