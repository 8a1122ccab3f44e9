package offline

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/backend"
	"etcdx/server/mvcc"
	"etcdx/server/schema"
)

// HashKVResult is what `etcdutl hashkv` prints, with upstream's field names.
type HashKVResult struct {
	Hash            uint32 `json:"hash"`
	HashRevision    int64  `json:"hashRevision"`
	CompactRevision int64  `json:"compactRevision"`
}

// hashKV computes the same hash a live member answers to HashKV at rev (0: latest), from a bbolt
// file. The file is read under a shared lock and copied; the hash is computed on the copy, so the
// input is never changed (opening a store may finish an interrupted compaction).
func hashKV(dbFile string, rev int64, wait time.Duration) (*HashKVResult, error) {
	if _, err := os.Stat(dbFile); err != nil {
		return nil, err
	}
	src, err := openDB(dbFile, true, wait)
	if err != nil {
		return nil, err
	}
	tmpDir, err := os.MkdirTemp("", "etcdutl-hashkv-")
	if err != nil {
		src.Close()
		return nil, err
	}
	defer os.RemoveAll(tmpDir)
	cp := filepath.Join(tmpDir, "db")
	err = backend.SafeView(src, func(tx *bolt.Tx) error {
		return writeFileSynced(cp, func(w io.Writer) error { _, err := tx.WriteTo(w); return err })
	})
	src.Close()
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", dbFile, err)
	}
	be, err := backend.Open(backend.Config{Path: cp, Buckets: schema.Buckets})
	if err != nil {
		return nil, err
	}
	defer be.Close()
	st, err := mvcc.Open(be, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dbFile, err)
	}
	defer st.Close()
	h, hashRev, _, compactRev, err := st.HashKV(rev)
	if err != nil {
		return nil, err
	}
	return &HashKVResult{Hash: h, HashRevision: hashRev, CompactRevision: compactRev}, nil
}
