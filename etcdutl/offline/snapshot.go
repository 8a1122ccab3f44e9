package offline

// Snapshot files: verified, described, and restored into a fresh data directory for a new
// cluster. The snapshot format is upstream's: the bbolt file, optionally followed by the SHA-256
// of its contents.

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/backend"
	"etcdx/server/membership"
	"etcdx/server/schema"
	"etcdx/server/snap"
	"etcdx/server/wal"
)

// ErrHashMismatch means the snapshot's trailing SHA-256 does not match its contents.
var ErrHashMismatch = errors.New("snapshot file integrity check failed: sha256 mismatch")

// hashMismatch is ErrHashMismatch in upstream's words: the hash the file carries, then the one
// its contents have, as Go prints byte slices.
type hashMismatch struct{ stored, computed []byte }

func (e hashMismatch) Error() string {
	return fmt.Sprintf("expected sha256 %v, got %v", e.stored, e.computed)
}

func (e hashMismatch) Is(target error) bool { return target == ErrHashMismatch }

// readVerified returns the database bytes of a snapshot file, checking the trailing hash when
// the file has one (its size is then 32 bytes past a page multiple, as upstream detects it).
func readVerified(path string, skipHashCheck bool) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	hasHash := len(data)%512 == sha256.Size
	if !hasHash {
		if !skipHashCheck {
			return nil, fmt.Errorf("snapshot %s has no integrity hash (it was not made by 'snapshot save'); pass --skip-hash-check to restore it anyway (for a copy of a member's db file)", path)
		}
		return data, nil
	}
	db, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if !skipHashCheck {
		if want := sha256.Sum256(db); !bytes.Equal(sum, want[:]) {
			return nil, hashMismatch{stored: sum, computed: want[:]}
		}
	}
	return db, nil
}

// Status describes a snapshot file, as `etcdutl snapshot status` prints it.
type Status struct {
	Hash      uint32 `json:"hash"`
	Revision  int64  `json:"revision"`
	TotalKey  int    `json:"totalKey"`
	TotalSize int64  `json:"totalSize"`
	Version   string `json:"version"`
	// Entries are the keys of every bucket, what upstream 3.5 reported as the total keys.
	Entries int `json:"-"`
}

// getStatus reads a snapshot (or db) file without changing it.
func getStatus(path string) (*Status, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err // already names the file, as upstream's says it
	}
	db, err := openReadOnly(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st := &Status{}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	err = backend.SafeView(db, func(tx *bolt.Tx) error {
		st.TotalSize = tx.Size()
		sv, err := schema.Read(tx)
		if err != nil {
			return err
		}
		st.Version = sv.Full()
		// TotalKey counts keys alive at the latest revision, as upstream 3.6 reports it.
		live := map[string]bool{}
		err = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			h.Write(name)
			isKey := bytes.Equal(name, schema.Key)
			return b.ForEach(func(k, v []byte) error {
				if isKey {
					r, tomb, err := schema.ParseRevisionKey(k)
					if err != nil {
						return err
					}
					st.Revision = max(st.Revision, r.Main)
					var kv mvccpb.KeyValue
					if err := kv.Unmarshal(v); err != nil {
						return fmt.Errorf("revision %d_%d: %w", r.Main, r.Sub, err)
					}
					if len(kv.Key) == 0 {
						// a revision marker left by --bump-revision
					} else if tomb {
						delete(live, string(kv.Key))
					} else {
						live[string(kv.Key)] = true
					}
				}
				st.Entries++
				h.Write(k)
				h.Write(v)
				return nil
			})
		})
		st.TotalKey = len(live)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	st.Hash = h.Sum32()
	return st, nil
}

func openReadOnly(path string) (*bolt.DB, error) {
	// bbolt refuses a file with a trailing hash only if its meta pages are bad; the trailer is
	// past the last page and ignored.
	db, err := backend.OpenFile(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("not a valid snapshot or database file: %w", err)
	}
	// bbolt checked the meta pages; the page tree it would follow is checked here.
	if err := backend.VerifyFile(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("not a valid snapshot or database file: %w", err)
	}
	return db, nil
}

// RestoreConfig says what to restore and as which member of which new cluster.
type RestoreConfig struct {
	SnapshotPath string
	DataDir      string
	// WALDir, when set, is where the WAL goes instead of the data dir (--wal-dir).
	WALDir              string
	Name                string
	PeerURLs            []string
	InitialCluster      map[string][]string
	InitialClusterToken string
	SkipHashCheck       bool
	// BumpRevision raises the restored store's revision by this much, so watchers and caches
	// that saw revisions after the snapshot never see a revision go backwards.
	BumpRevision int64
	// MarkCompacted schedules a compaction at the bumped revision, so clients asking for
	// revisions the restored data does not hold get "compacted" instead of stale answers.
	MarkCompacted bool
	// InitialMmapSize is the restored file's first bbolt memory map (--initial-memory-map-size);
	// zero means the server's default.
	InitialMmapSize int64
	// Log hears upstream's events of a restore ("restoring snapshot", "added member" for each
	// member, "restored snapshot"); nil: none.
	Log *slog.Logger
}

// restoreLogFields are the fields of upstream's "restoring snapshot" and "restored snapshot".
func (cfg RestoreConfig) restoreLogFields() []any {
	walDir := cfg.WALDir
	if walDir == "" {
		walDir = schema.WALDir(cfg.DataDir)
	}
	mmap := cfg.InitialMmapSize
	if mmap == 0 {
		mmap = 10 << 30 // the backend's default
	}
	return []any{"path", cfg.SnapshotPath, "wal-dir", walDir, "data-dir", cfg.DataDir, "snap-dir", schema.SnapDir(cfg.DataDir),
		"initial-memory-map-size", mmap}
}

// restore writes a data directory from which the member starts as part of a new cluster whose
// keyspace is the snapshot's. The data directory must not exist yet (or be empty).
func restore(cfg RestoreConfig) error {
	if cfg.BumpRevision < 0 {
		return fmt.Errorf("--bump-revision must not be negative")
	}
	if cfg.BumpRevision > 0 && !cfg.MarkCompacted {
		return fmt.Errorf("--mark-compacted is required when --bump-revision is set")
	}
	if des, err := os.ReadDir(cfg.DataDir); err == nil && len(des) > 0 {
		return fmt.Errorf("data-dir %q not empty or could not be read", cfg.DataDir)
	}
	if des, err := os.ReadDir(cfg.WALDir); cfg.WALDir != "" && err == nil && len(des) > 0 {
		return fmt.Errorf("wal-dir %q not empty or could not be read", cfg.WALDir)
	}
	in, err := membership.NewInitial(cfg.Name, cfg.PeerURLs, cfg.InitialCluster, cfg.InitialClusterToken)
	var fe *membership.FlagsError
	switch {
	case errors.As(err, &fe) && fe.InCluster == nil:
		return fmt.Errorf("couldn't find local name %q in the initial cluster configuration", cfg.Name) // upstream's words
	case errors.As(err, &fe):
		return fmt.Errorf("--initial-cluster has %s=%v but --initial-advertise-peer-urls is %v", cfg.Name, fe.InCluster, cfg.PeerURLs)
	case err != nil:
		return err
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("restoring snapshot", cfg.restoreLogFields()...)
	db, err := readVerified(cfg.SnapshotPath, cfg.SkipHashCheck)
	if err != nil {
		return err
	}
	tmp := filepath.Clean(cfg.DataDir) + ".restoring"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	defer func() {
		if _, err := os.Stat(cfg.DataDir); err != nil {
			os.RemoveAll(tmp) // not moved into place: a failure, or a damaged file bbolt choked on
		}
	}()
	if err := os.MkdirAll(schema.SnapDir(tmp), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", schema.SnapDir(tmp), err)
	}
	dbPath := schema.BackendPath(tmp)
	if err := os.WriteFile(dbPath, db, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", dbPath, err)
	}
	if _, err := openReadOnlyCheck(dbPath); err != nil {
		os.RemoveAll(tmp)
		return err
	}

	be, err := backend.Open(backend.Config{Path: dbPath, Buckets: schema.Buckets, InitialMmapSize: cfg.InitialMmapSize})
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	b := be.Batch()
	log.Info("Trimming membership information from the backend...")
	err = rewriteMembership(b, in.Members)
	if err == nil {
		// Upstream adds the members in ID order and logs each as a member of no member yet.
		ms := slices.Clone(in.Members)
		slices.SortFunc(ms, func(a, b membership.Member) int { return cmp.Compare(a.ID, b.ID) })
		for _, m := range ms {
			log.Info("added member", "cluster-id", fmt.Sprintf("%x", in.ClusterID), "local-member-id", "0",
				"added-peer-id", fmt.Sprintf("%x", m.ID), "added-peer-peer-urls", m.PeerURLs, "added-peer-is-learner", m.IsLearner)
		}
	}
	if err == nil && cfg.BumpRevision > 0 {
		err = bumpRevision(b, cfg.BumpRevision)
	}
	if uerr := b.Unlock(); err == nil {
		err = uerr
	}
	if cerr := be.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("rewrite membership: %w", err)
	}

	// The WAL holds the configuration entries of the new cluster, already committed.
	ents, err := in.BootstrapEntries()
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	w, err := wal.Create(schema.WALDir(tmp), schema.WALMetadata{NodeID: in.SelfID, ClusterID: in.ClusterID}.Encode())
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	err = saveRestoredLog(w, schema.SnapDir(tmp), in, ents)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(cfg.DataDir)), 0o700); err != nil {
		return err
	}
	os.Remove(cfg.DataDir) // an empty directory may stand where the result goes
	if err := os.Rename(tmp, cfg.DataDir); err != nil {
		return fmt.Errorf("move restored data into place: %w", err)
	}
	if cfg.WALDir != "" {
		os.Remove(cfg.WALDir) // an empty directory may stand there too
		if err := os.MkdirAll(filepath.Dir(filepath.Clean(cfg.WALDir)), 0o700); err != nil {
			return err
		}
		if err := os.Rename(schema.WALDir(cfg.DataDir), cfg.WALDir); err != nil {
			return fmt.Errorf("move the restored WAL to %s: %w", cfg.WALDir, err)
		}
	}
	log.Info("restored snapshot", cfg.restoreLogFields()...)
	return nil
}

// saveRestoredLog writes the new cluster's log as upstream's restore does: its configuration
// entries (1..n, term 1) committed, with a vote for the lowest member ID, then a raft snapshot
// at n of that membership (the .snap file, v2-store document) recorded in the WAL. Upstream's
// members, and its tests, load that snapshot at start.
func saveRestoredLog(w *wal.WAL, snapDir string, in *membership.Initial, ents []raftpb.Entry) error {
	n := uint64(len(ents))
	ids := make([]uint64, 0, len(in.Members))
	for _, m := range in.Members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	if err := w.Save(raftpb.HardState{Term: 1, Vote: ids[0], Commit: n}, ents); err != nil {
		return err
	}
	data, err := membership.EncodeV2Store(membership.State{Members: in.Members}, "")
	if err != nil {
		return err
	}
	meta := raftpb.SnapshotMetadata{Index: n, Term: 1, ConfState: raftpb.ConfState{Voters: ids}}
	if err := snap.Save(snapDir, raftpb.Snapshot{Data: data, Metadata: meta}); err != nil {
		return fmt.Errorf("save the restored membership snapshot: %w", err)
	}
	return w.SaveSnapshot(meta)
}

func openReadOnlyCheck(path string) (bool, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return false, err
	}
	defer db.Close()
	err = backend.SafeView(db, func(tx *bolt.Tx) error {
		if tx.Bucket(schema.Key) == nil || tx.Bucket(schema.Meta) == nil {
			return fmt.Errorf("%s has no etcd key/meta buckets: not an etcd snapshot", path)
		}
		return nil
	})
	return err == nil, err
}

// rewriteMembership replaces the old cluster's members with the new ones and marks their
// configuration entries (1..n) as applied.
func rewriteMembership(b *backend.BatchTx, members []membership.Member) error {
	tx, err := b.WritableTx()
	if err != nil {
		return err
	}
	if err := membership.Rewrite(tx, members); err != nil {
		return err
	}
	return schema.PutConsistentIndex(b, uint64(len(members)), 1)
}

// bumpRevision writes an empty marker at latest+amount in the key bucket and schedules a
// compaction there, as upstream's restore does (the file layout is the same).
func bumpRevision(b *backend.BatchTx, amount int64) error {
	latest := int64(1)
	tx, err := b.Tx()
	if err != nil {
		return err
	}
	if k, _ := tx.Bucket(schema.Key).Cursor().Last(); k != nil {
		r, _, err := schema.ParseRevisionKey(k)
		if err != nil {
			return fmt.Errorf("read latest revision: %w", err)
		}
		latest = r.Main
	}
	bumped := schema.Revision{Main: latest + amount}
	if err := b.Put(schema.Key, schema.RevisionKey(bumped, false), []byte{}); err != nil {
		return err
	}
	return b.Put(schema.Meta, schema.MetaScheduledCompact, schema.RevisionKey(schema.Revision{Main: bumped.Main}, false))
}
