package offline

import (
	"errors"
	"fmt"
	"math"
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

// DefaultLockWait is how long an operation waits for a member's lock on its database when the
// caller names no wait (etcdutl's --timeout, upstream 3.7's, is 10 s by default).
const DefaultLockWait = time.Second

// openDB opens a member's bbolt file, waiting up to wait for a running server's lock (0: for
// ever, as upstream's --timeout 0) and then reporting it as ErrInUse.
func openDB(path string, readOnly bool, wait time.Duration) (*bolt.DB, error) {
	db, err := backend.OpenFile(path, &bolt.Options{Timeout: wait, ReadOnly: readOnly})
	if errors.Is(err, backend.ErrLocked) {
		return nil, fmt.Errorf("%w: %s is locked (waited %v)", ErrInUse, path, wait)
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

// openBackend opens the member's file for writing, waiting as openDB does, and reports a running
// server as ErrInUse.
func openBackend(dataDir string, wait time.Duration) (*backend.Backend, error) {
	if wait == 0 {
		wait = math.MaxInt64 // for ever
	}
	be, err := backend.Open(backend.Config{Path: schema.BackendPath(dataDir), Buckets: schema.Buckets, OpenTimeout: wait})
	if errors.Is(err, backend.ErrLocked) {
		return nil, fmt.Errorf("%w: stop it first (or use etcdctl for a live member; waited %v)", ErrInUse, wait)
	}
	return be, err
}
