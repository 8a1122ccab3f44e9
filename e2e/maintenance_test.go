package e2e

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestMaintenanceStatusHashSnapshotDefrag(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	val := strings.Repeat("x", 10*1024)
	for i := 0; i < 300; i++ {
		if _, err := c.Put(ctx, fmt.Sprintf("k%03d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.Status(ctx, m.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != ReleaseOf(CurrentLevel) || st.Leader != st.Header.MemberId || st.RaftIndex < 300 || st.RaftAppliedIndex < 300 ||
		st.RaftTerm == 0 || st.DbSize < 1_000_000 || st.DbSizeInUse > st.DbSize || st.DbSizeQuota != 2<<30 || len(st.Errors) != 0 {
		t.Fatalf("status: %+v", st)
	}
	ml, err := c.MemberList(ctx)
	if err != nil || len(ml.Members) != 1 || ml.Members[0].Name != "m1" || ml.Members[0].ClientURLs[0] != m.ClientURL ||
		ml.Members[0].PeerURLs[0] != m.PeerURL || ml.Members[0].ID != st.Header.MemberId {
		t.Fatalf("member list: %+v %v", ml, err)
	}

	h1, err := c.HashKV(ctx, m.ClientURL, 0)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := c.HashKV(ctx, m.ClientURL, 0)
	if h1.Hash != h2.Hash || h1.Header.Revision != 301 {
		t.Fatalf("hashkv not stable: %+v %+v", h1, h2)
	}
	hAt, _ := c.HashKV(ctx, m.ClientURL, 100)
	c.Put(ctx, "k000", "changed")
	h3, _ := c.HashKV(ctx, m.ClientURL, 0)
	if h3.Hash == h1.Hash {
		t.Fatal("hashkv did not change after a write")
	}
	if again, _ := c.HashKV(ctx, m.ClientURL, 100); again.Hash != hAt.Hash {
		t.Fatal("hashkv at a fixed revision changed after a later write")
	}
	if _, err := c.HashKV(ctx, m.ClientURL, 1000); !errors.Is(err, rpctypes.ErrFutureRev) {
		t.Fatalf("hashkv at future revision: %v", err)
	}

	// Hash covers the whole backend: stable without writes, changed by one.
	mc := pb.NewMaintenanceClient(c.ActiveConnection())
	hs1, err := mc.Hash(ctx, &pb.HashRequest{})
	if err != nil {
		t.Fatal(err)
	}
	hs2, _ := mc.Hash(ctx, &pb.HashRequest{})
	c.Put(ctx, "hash-probe", "1")
	hs3, _ := mc.Hash(ctx, &pb.HashRequest{})
	if hs1.Hash != hs2.Hash || hs1.Hash == hs3.Hash || hs1.Header.MemberId != st.Header.MemberId {
		t.Fatalf("Hash: %d %d %d", hs1.Hash, hs2.Hash, hs3.Hash)
	}
	c.Delete(ctx, "hash-probe")

	// Snapshot: the stream is the bbolt file plus its SHA-256.
	rc, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	db, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if want := sha256.Sum256(db); !bytes.Equal(sum, want[:]) {
		t.Fatal("snapshot trailer is not the SHA-256 of the data")
	}
	path := filepath.Join(t.TempDir(), "snap.db")
	os.WriteFile(path, db, 0o600)
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("snapshot is not a bbolt file: %v", err)
	}
	var keys int
	bdb.View(func(tx *bolt.Tx) error {
		keys = tx.Bucket([]byte("key")).Stats().KeyN
		return nil
	})
	bdb.Close()
	if keys != 303 { // 300 puts, the overwrite of k000, the hash probe and its tombstone
		t.Fatalf("snapshot key bucket holds %d revisions, want 303", keys)
	}

	// Defragment gives back the space of deleted, compacted data.
	dr, _ := c.Delete(ctx, "k", clientv3.WithPrefix())
	if _, err := c.Compact(ctx, dr.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Status(ctx, m.ClientURL)
	if _, err := c.Defragment(ctx, m.ClientURL); err != nil {
		t.Fatal(err)
	}
	after, _ := c.Status(ctx, m.ClientURL)
	if after.DbSize >= before.DbSize/2 {
		t.Fatalf("defragment: %d -> %d bytes", before.DbSize, after.DbSize)
	}
	if _, err := c.Put(ctx, "after-defrag", "ok"); err != nil {
		t.Fatalf("write after defragment: %v", err)
	}
	if r, _ := c.Get(ctx, "after-defrag"); len(r.Kvs) != 1 {
		t.Fatal("read after defragment failed")
	}
	if _, err := c.MoveLeader(ctx, st.Header.MemberId); err != nil {
		t.Fatalf("move leader to itself: %v", err)
	}
}

func TestNoSpaceAlarm(t *testing.T) {
	const quota = 512 * 1024
	m := NewMember(t, "--quota-backend-bytes", strconv.Itoa(quota))
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	val := strings.Repeat("v", 16*1024)
	var err error
	n := 0
	for ; n < 200; n++ {
		if _, err = c.Put(ctx, fmt.Sprintf("fill/%03d", n), val); err != nil {
			break
		}
	}
	if !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("after %d puts of 16 KiB under a 512 KiB quota: %v", n, err)
	}
	alarms, err := c.AlarmList(ctx)
	if err != nil || len(alarms.Alarms) != 1 || alarms.Alarms[0].Alarm != pb.AlarmType_NOSPACE {
		t.Fatalf("alarm list: %+v %v", alarms, err)
	}
	// Every write that can grow the file fails while the alarm is raised, even a tiny one.
	if _, err := c.Put(ctx, "small", "1"); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("small put under NOSPACE: %v", err)
	}
	if _, err := c.Grant(ctx, 10); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("lease grant under NOSPACE: %v", err)
	}
	st, _ := c.Status(ctx, m.ClientURL)
	if len(st.Errors) == 0 || !strings.Contains(st.Errors[0], "NOSPACE") {
		t.Fatalf("status errors: %v", st.Errors)
	}
	if body := httpGet(t, m.ClientURL+"/health"); !strings.Contains(body, `"health":"false"`) || !strings.Contains(body, "NOSPACE") {
		t.Fatalf("/health under NOSPACE: %s", body)
	}
	// Deletes still work; free space, then disarm.
	dr, err := c.Delete(ctx, "fill/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("delete under NOSPACE: %v", err)
	}
	c.Compact(ctx, dr.Header.Revision, clientv3.WithCompactPhysical())
	if _, err := c.Defragment(ctx, m.ClientURL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: alarms.Alarms[0].MemberID, Alarm: pb.AlarmType_NOSPACE}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "small", "1"); err != nil {
		t.Fatalf("put after disarm: %v", err)
	}
	if a, _ := c.AlarmList(ctx); len(a.Alarms) != 0 {
		t.Fatalf("alarms after disarm: %+v", a.Alarms)
	}
}
