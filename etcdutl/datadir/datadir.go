// Package datadir holds etcdutl's offline operations on a stopped member's data directory:
// backup, defrag, migrate and hashkv. None of them runs while a server holds the directory, and
// none changes anything it was not asked to change.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/backend"
)

// ErrInUse means a running etcd holds the data directory.
var ErrInUse = errors.New("the data directory is in use by a running etcd")

// Layout of a member's data directory, as upstream lays it out.
func memberDir(dataDir string) string { return filepath.Join(dataDir, "member") }

// WALDir is where the member's WAL segments are.
func WALDir(dataDir string) string { return filepath.Join(memberDir(dataDir), "wal") }

// SnapDir is where raft snapshots and the bbolt file are.
func SnapDir(dataDir string) string { return filepath.Join(memberDir(dataDir), "snap") }

// DBPath is the member's bbolt file.
func DBPath(dataDir string) string { return filepath.Join(SnapDir(dataDir), "db") }

// checkDataDir makes sure dataDir looks like a member's data directory.
func checkDataDir(dataDir string) error {
	if dataDir == "" {
		return fmt.Errorf("--data-dir is required")
	}
	if _, err := os.Stat(DBPath(dataDir)); err != nil {
		return fmt.Errorf("%s is not an etcd data directory (no member/snap/db): %w", dataDir, err)
	}
	return nil
}

// openDB opens a bbolt file, reporting a running server's lock as ErrInUse.
func openDB(path string, readOnly bool) (db *bolt.DB, err error) {
	// bbolt panics on some malformed files: a damaged file must be an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%s is not a valid database file: %v", path, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: readOnly})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is locked", ErrInUse, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// openBackend opens the member's file for writing, reporting a running server as ErrInUse.
func openBackend(dataDir string) (*backend.Backend, error) {
	be, err := backend.Open(backend.Config{Path: DBPath(dataDir)})
	if errors.Is(err, backend.ErrLocked) {
		return nil, fmt.Errorf("%w: stop it first (or use etcdctl for a live member)", ErrInUse)
	}
	return be, err
}
