package etcdserver

import (
	"log/slog"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/backend"
	"etcdx/server/schema"
	"etcdx/server/version"
)

// A database received with a snapshot is the sender's: a member joining at a downgrade's target
// (3.6) before the leader lowered the cluster version gets cluster and storage version 3.7. It
// must hold storage 3.6 before anything reads its versions, or its next start refuses it (the
// virtual-time campaign's seed 466).
func TestReceivedDatabaseTakesTheMembersStorageVersion(t *testing.T) {
	cases := []struct {
		name                string
		level, cluster, was version.Level
		want                version.Level
	}{
		{"a downgrade's target, before the lowering", version.V3_6, version.V3_7, version.V3_7, version.V3_6},
		{"the cluster's own level: as it came", version.V3_7, version.V3_7, version.V3_7, version.V3_7},
		{"a newer member during an upgrade: the cluster's", version.V3_7, version.V3_6, version.V3_6, version.V3_6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			be, err := backend.Open(backend.Config{Path: filepath.Join(t.TempDir(), "db"), Buckets: schema.Buckets})
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			b := be.Batch()
			tx, err := b.WritableTx()
			if err == nil {
				_, _, err = schema.Migrate(tx, c.was)
			}
			if err == nil {
				err = schema.PutClusterVersion(b, c.cluster)
			}
			if uerr := b.Unlock(); err == nil {
				err = uerr
			}
			if err == nil {
				err = be.Commit() // as a received file is: committed
			}
			if err != nil {
				t.Fatal(err)
			}
			s := &Server{be: be, cfg: Config{Level: c.level}, log: slog.Default()}
			if err := s.alignReceivedStorage(); err != nil {
				t.Fatal(err)
			}
			var got version.Level
			if err := be.View(func(tx *bolt.Tx) error { got, err = schema.Read(tx); return err }); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("storage version %v after the alignment, want %v", got, c.want)
			}
		})
	}
}
