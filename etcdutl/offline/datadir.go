// Package offline holds every etcdutl operation, all of them on files no server holds: a
// stopped member's data directory (backup, defrag, migrate, hashkv) and snapshot files (status,
// restore). None changes anything it was not asked to change. The file layouts come from
// etcdx/server/schema, a new cluster's members from etcdx/server/membership.
package offline

import (
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/backend"
	"etcdx/server/schema"
)

// ErrInUse means a running etcd holds the data directory.
var ErrInUse = errors.New("the data directory is in use by a running etcd")

// checkDataDir makes sure dataDir looks like a member's data directory.
func checkDataDir(dataDir string) error {
	if dataDir == "" {
		return fmt.Errorf("--data-dir is required")
	}
	if _, err := os.Stat(schema.BackendPath(dataDir)); err != nil {
		return fmt.Errorf("%s is not an etcd data directory (no member/snap/db): %w", dataDir, err)
	}
	return nil
}

// openDB opens a member's bbolt file, reporting a running server's lock as ErrInUse.
func openDB(path string, readOnly bool) (*bolt.DB, error) {
	db, err := backend.OpenFile(path, &bolt.Options{Timeout: time.Second, ReadOnly: readOnly})
	if errors.Is(err, backend.ErrLocked) {
		return nil, fmt.Errorf("%w: %s is locked", ErrInUse, path)
	}
	if err != nil {
		return nil, err
	}
	// bbolt checked the meta pages; the page tree it would follow is checked here.
	if err := backend.VerifyFile(path); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openBackend opens the member's file for writing, reporting a running server as ErrInUse.
func openBackend(dataDir string) (*backend.Backend, error) {
	be, err := backend.Open(backend.Config{Path: schema.BackendPath(dataDir), Buckets: schema.Buckets})
	if errors.Is(err, backend.ErrLocked) {
		return nil, fmt.Errorf("%w: stop it first (or use etcdctl for a live member)", ErrInUse)
	}
	return be, err
}
