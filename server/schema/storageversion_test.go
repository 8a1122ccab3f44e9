package schema

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/version"
)

func TestMigrateUpAndDown(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	read := func() version.Level {
		var l version.Level
		if err := db.View(func(tx *bolt.Tx) (err error) { l, err = Read(tx); return }); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if got := read(); got != version.V3_5 {
		t.Fatalf("an empty file reads as %v, want 3.5", got)
	}
	for _, to := range []version.Level{version.V3_6, version.V3_6, version.V3_5, version.V3_5, version.V3_6} {
		if err := db.Update(func(tx *bolt.Tx) error { _, _, err := Migrate(tx, to); return err }); err != nil {
			t.Fatal(err)
		}
		if got := read(); got != to {
			t.Fatalf("after migrating to %v the file reads %v", to, got)
		}
	}
	db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(Meta).Get(MetaStorageVersion); string(v) != "3.6.0" {
			t.Fatalf("storageVersion = %q, want upstream's 3.6.0", v)
		}
		return nil
	})
	if _, err := plan(version.V3_6, version.Level{Major: 3, Minor: 9}); err == nil {
		t.Fatal("a plan to an unknown level was made")
	}
}

func TestUnreadableStorageVersion(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists(Meta)
		return b.Put(MetaStorageVersion, []byte("banana"))
	})
	if err := db.View(func(tx *bolt.Tx) error { _, err := Read(tx); return err }); err == nil {
		t.Fatal("garbage storage version accepted")
	}
}
