package schema

import (
	"bytes"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/version"
)

// The byte layouts are upstream's; a change here breaks data-dir interchange.
func TestKeyEncodings(t *testing.T) {
	k := RevisionKey(Revision{Main: 0x0102, Sub: 3}, false)
	if want := []byte{0, 0, 0, 0, 0, 0, 1, 2, '_', 0, 0, 0, 0, 0, 0, 0, 3}; !bytes.Equal(k, want) {
		t.Errorf("revision key %x, want %x", k, want)
	}
	tk := RevisionKey(Revision{Main: 7, Sub: 0}, true)
	if len(tk) != 18 || tk[17] != 't' {
		t.Errorf("tombstone key %x", tk)
	}
	for _, c := range []struct {
		key  []byte
		rev  Revision
		tomb bool
	}{{k, Revision{0x0102, 3}, false}, {tk, Revision{7, 0}, true}} {
		r, tomb, err := ParseRevisionKey(c.key)
		if err != nil || r != c.rev || tomb != c.tomb {
			t.Errorf("ParseRevisionKey(%x) = %v %v %v", c.key, r, tomb, err)
		}
	}
	if _, _, err := ParseRevisionKey([]byte("short")); err == nil {
		t.Error("a malformed revision key was accepted")
	}
	if !(Revision{2, 0}).GreaterThan(Revision{1, 9}) || (Revision{1, 1}).GreaterThan(Revision{1, 1}) {
		t.Error("revision order")
	}

	if string(MemberKey(0x8e9e05c52164694d)) != "8e9e05c52164694d" || string(MemberKey(0xabc)) != "abc" {
		t.Error("member keys are the ID in hex without padding")
	}
	if id, err := ParseMemberKey([]byte("abc")); err != nil || id != 0xabc {
		t.Errorf("ParseMemberKey = %x, %v", id, err)
	}
	if _, err := ParseMemberKey([]byte("xyz")); err == nil {
		t.Error("a malformed member key was accepted")
	}

	if lk := LeaseKey(0x0a0b); !bytes.Equal(lk, []byte{0, 0, 0, 0, 0, 0, 0x0a, 0x0b}) {
		t.Errorf("lease key %x", lk)
	}
	// leasepb.Lease{ID: 1, TTL: 60, RemainingTTL: 30} as upstream's protobuf encodes it.
	rec := LeaseRecord{ID: 1, TTL: 60, RemainingTTL: 30}
	if enc := rec.Encode(); !bytes.Equal(enc, []byte{0x08, 0x01, 0x10, 0x3c, 0x18, 0x1e}) {
		t.Errorf("lease value %x", enc)
	}
	if got, err := DecodeLease(append(rec.Encode(), 0x22, 0x01, 'x')); err != nil || got != rec {
		t.Errorf("DecodeLease (with an unknown field) = %+v, %v", got, err)
	}
	if _, err := DecodeLease([]byte{0x08}); err == nil {
		t.Error("a truncated lease value was accepted")
	}

	am := &pb.AlarmMember{MemberID: 0xab, Alarm: pb.AlarmType_NOSPACE}
	ak, err := AlarmKey(am)
	want, _ := am.Marshal()
	if err != nil || !bytes.Equal(ak, want) {
		t.Errorf("alarm key %x, want %x", ak, want)
	}
	if back, err := ParseAlarmKey(ak); err != nil || back.MemberID != 0xab || back.Alarm != pb.AlarmType_NOSPACE {
		t.Errorf("ParseAlarmKey = %+v, %v", back, err)
	}

	md := WALMetadata{NodeID: 1, ClusterID: 2}
	// Upstream's etcdserverpb.Metadata: NodeID field 1, ClusterID field 2, both varints.
	if string(md.Encode()) != "\x08\x01\x10\x02" {
		t.Errorf("WAL metadata %s", md.Encode())
	}
	if back, err := DecodeWALMetadata(md.Encode()); err != nil || back != md {
		t.Errorf("DecodeWALMetadata = %+v, %v", back, err)
	}
}

func TestLayout(t *testing.T) {
	for got, want := range map[string]string{
		MemberDir("/d"):      "/d/member",
		WALDir("/d"):         "/d/member/wal",
		SnapDir("/d"):        "/d/member/snap",
		BackendPath("/d"):    "/d/member/snap/db",
		SnapDBPath("/d", 10): "/d/member/snap/000000000000000a.snap.db",
	} {
		if got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
}

// The cluster bucket's values as upstream writes them, read back; absent values read as zero.
func TestClusterStateRoundTrip(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		cv, err1 := ReadClusterVersion(tx)
		dg, err2 := ReadDowngrade(tx)
		i, term := ReadConsistentIndex(tx)
		if !cv.IsZero() || dg.Enabled || i != 0 || term != 0 || err1 != nil || err2 != nil {
			t.Errorf("an empty file reads %v %+v %d %d %v %v", cv, dg, i, term, err1, err2)
		}
		return nil
	})
	err = db.Update(func(tx *bolt.Tx) error {
		w := TxWriter(tx)
		if err := PutClusterVersion(w, version.V3_6); err != nil {
			return err
		}
		if err := PutDowngrade(w, version.DowngradeInfo{TargetVersion: "3.5.0", Enabled: true}); err != nil {
			return err
		}
		return PutConsistentIndex(w, 42, 7)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket(Cluster).Get(ClusterVersion)); v != "3.6.0" {
			t.Errorf("clusterVersion %q", v)
		}
		if v := string(tx.Bucket(Cluster).Get(ClusterDowngrade)); v != `{"target-version":"3.5.0","enabled":true}` {
			t.Errorf("downgrade %s", v)
		}
		cv, _ := ReadClusterVersion(tx)
		dg, _ := ReadDowngrade(tx)
		i, term := ReadConsistentIndex(tx)
		if cv != version.V3_6 || dg.Target() != version.V3_5 || i != 42 || term != 7 {
			t.Errorf("read back %v %+v %d %d", cv, dg, i, term)
		}
		return nil
	})
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(Cluster).Put(ClusterVersion, []byte("nope")) })
	db.View(func(tx *bolt.Tx) error {
		if _, err := ReadClusterVersion(tx); err == nil {
			t.Error("an unreadable cluster version was accepted")
		}
		return nil
	})
}
