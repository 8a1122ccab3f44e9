package offline

// Check walks a stopped member's data dir (WAL, snapshot files, database) read-only and reports
// every inconsistency it finds, each where it was found, including the ones that would stop the
// member at start (a WAL behind the database) or that only a full read shows (a damaged page).

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/server/backend"
	"etcdx/server/schema"
	"etcdx/server/snap"
	"etcdx/server/wal"
)

// CheckReport is what Check found. Problems make the data dir unfit to start as it is; notes are
// states a start handles by itself (an interrupted final write, a snapshot not yet recorded).
type CheckReport struct {
	DataDir  string   `json:"dataDir"`
	Problems []string `json:"problems"`
	Notes    []string `json:"notes"`

	WALSegments     int    `json:"walSegments"`
	WALFirstIndex   uint64 `json:"walFirstIndex"`
	WALLastIndex    uint64 `json:"walLastIndex"`
	CommitIndex     uint64 `json:"commitIndex"`
	Term            uint64 `json:"term"`
	SnapshotFiles   int    `json:"snapshotFiles"`
	SnapshotIndex   uint64 `json:"snapshotIndex"`
	ConsistentIndex uint64 `json:"consistentIndex"`
	ConsistentTerm  uint64 `json:"consistentTerm"`
	Revisions       int    `json:"revisions"`
	Revision        int64  `json:"revision"`
	CompactRevision int64  `json:"compactRevision"`
	StorageVersion  string `json:"storageVersion"`
}

func (r *CheckReport) problem(format string, a ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, a...))
}

func (r *CheckReport) note(format string, a ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, a...))
}

// check inspects dataDir without changing any file. The error is for a data dir that cannot be
// checked at all (missing, or held by a running member); what is wrong inside is in the report.
func check(dataDir string) (*CheckReport, error) {
	if _, err := os.Stat(schema.MemberDir(dataDir)); err != nil {
		return nil, fmt.Errorf("%s is not an etcd data directory (no member dir): %w", dataDir, err)
	}
	r := &CheckReport{DataDir: dataDir}
	in := checkWAL(r, schema.WALDir(dataDir))
	newest := checkSnapFiles(r, schema.SnapDir(dataDir), in)
	dbOK, err := checkDB(r, schema.BackendPath(dataDir))
	if err != nil {
		return nil, err
	}
	if in != nil && dbOK {
		checkAcross(r, in, newest, dataDir)
	}
	return r, nil
}

func checkWAL(r *CheckReport, dir string) *wal.Inspection {
	in, err := wal.Inspect(dir)
	if err != nil {
		r.problem("wal: %v", err)
		return nil
	}
	r.WALSegments, r.WALFirstIndex, r.WALLastIndex = in.Segments, in.FirstIndex, in.LastIndex
	r.CommitIndex, r.Term = in.State.Commit, in.State.Term
	if _, err := schema.DecodeWALMetadata(in.Metadata); err != nil {
		r.problem("wal: %v", err)
	}
	if in.TornTail != nil {
		r.note("wal: the last segment ends in an interrupted write, which the member cuts off at start: %v", in.TornTail)
	}
	if in.State.Commit > in.LastIndex && in.LastIndex != 0 {
		r.problem("wal: the commit index %d is past the last entry %d", in.State.Commit, in.LastIndex)
	}
	return in
}

// checkSnapFiles reads every .snap file and returns the newest one the WAL records (nil: none).
func checkSnapFiles(r *CheckReport, dir string, in *wal.Inspection) *snapFile {
	paths, err := snap.List(dir)
	if err != nil {
		r.problem("snap: %v", err)
		return nil
	}
	r.SnapshotFiles = len(paths)
	recorded := map[[2]uint64]bool{}
	if in != nil {
		for _, m := range in.Snapshots {
			recorded[[2]uint64{m.Index, m.Term}] = true
		}
	}
	var newest *snapFile
	for _, p := range paths { // newest first
		sn, err := snap.Load(p)
		if err != nil {
			r.problem("snap: %s: %v", filepath.Base(p), err)
			continue
		}
		md := sn.Metadata
		if in != nil && !recorded[[2]uint64{md.Index, md.Term}] {
			r.note("snap: %s (index %d) has no marker in the WAL; a start skips it", filepath.Base(p), md.Index)
			continue
		}
		if newest == nil {
			newest = &snapFile{path: p, index: md.Index, term: md.Term}
			r.SnapshotIndex = md.Index
		}
	}
	return newest
}

type snapFile struct {
	path        string
	index, term uint64
}

// checkDB reads every bucket of the database through a guard (a damaged page is reported, not a
// crash), checks what etcd keeps in it, then runs bbolt's own page check. It reports whether the
// file could be read at all.
func checkDB(r *CheckReport, path string) (bool, error) {
	if _, err := os.Stat(path); err != nil {
		r.problem("db: %v", err)
		return false, nil
	}
	if err := backend.VerifyFile(path); err != nil {
		r.problem("db: %v", err) // bbolt would loop or read outside the file: read no further
		return false, nil
	}
	db, err := backend.OpenFile(path, &bolt.Options{ReadOnly: true, Timeout: time.Second, PreLoadFreelist: true})
	if err != nil {
		if errors.Is(err, backend.ErrLocked) {
			return false, fmt.Errorf("%w: %s is locked", ErrInUse, path)
		}
		r.problem("db: %v", err)
		return false, nil
	}
	defer db.Close()
	var problems []string
	readErr := backend.SafeView(db, func(tx *bolt.Tx) error {
		for _, name := range [][]byte{schema.Key, schema.Meta} {
			if tx.Bucket(name) == nil {
				problems = append(problems, fmt.Sprintf("db: no %q bucket", name))
			}
		}
		if len(problems) > 0 {
			return nil
		}
		r.ConsistentIndex, r.ConsistentTerm = schema.ReadConsistentIndex(tx)
		if sv, err := schema.Read(tx); err != nil {
			problems = append(problems, fmt.Sprintf("db: storage version: %v", err))
		} else {
			r.StorageVersion = sv.String()
		}
		problems = append(problems, checkKeys(r, tx)...)
		meta := tx.Bucket(schema.Meta)
		for _, k := range [][]byte{schema.MetaScheduledCompact, schema.MetaFinishedCompact} {
			v := meta.Get(k)
			if v == nil {
				continue
			}
			rev, _, err := schema.ParseRevisionKey(v)
			if err != nil {
				problems = append(problems, fmt.Sprintf("db: meta %s: %v", k, err))
				continue
			}
			if rev.Main > r.Revision && r.Revisions > 0 {
				problems = append(problems, fmt.Sprintf("db: meta %s is revision %d, past the latest revision %d", k, rev.Main, r.Revision))
			}
			if bytes.Equal(k, schema.MetaFinishedCompact) {
				r.CompactRevision = rev.Main
			}
		}
		if lb := tx.Bucket(schema.Lease); lb != nil {
			lb.ForEach(func(k, v []byte) error {
				if _, err := schema.DecodeLease(v); err != nil {
					problems = append(problems, fmt.Sprintf("db: lease %x: %v", k, err))
				}
				return nil
			})
		}
		if _, err := schema.ReadAuth(tx); err != nil {
			problems = append(problems, fmt.Sprintf("db: auth: %v", err))
		}
		return nil
	})
	r.Problems = append(r.Problems, problems...)
	if readErr != nil {
		r.problem("db: %v", readErr)
		return false, nil
	}
	// Pages no bucket reaches, pages freed twice: only bbolt's walk of the page tree sees these.
	pageErr := backend.SafeView(db, func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			r.problem("db: page check: %v", err)
		}
		return nil
	})
	if pageErr != nil {
		r.problem("db: page check: %v", pageErr)
	}
	return true, nil
}

// checkKeys reads every revision of the key bucket.
func checkKeys(r *CheckReport, tx *bolt.Tx) []string {
	var problems []string
	_ = tx.Bucket(schema.Key).ForEach(func(k, v []byte) error {
		rev, tombstone, err := schema.ParseRevisionKey(k)
		if err != nil {
			problems = append(problems, fmt.Sprintf("db: key bucket: %x: %v", k, err))
			return nil
		}
		r.Revisions++
		r.Revision = max(r.Revision, rev.Main)
		var kv mvccpb.KeyValue
		if err := kv.Unmarshal(v); err != nil {
			problems = append(problems, fmt.Sprintf("db: revision %d_%d: %v", rev.Main, rev.Sub, err))
			return nil
		}
		// A deletion's record holds the key alone (upstream's layout): no revisions to compare.
		if !tombstone && len(kv.Key) > 0 && kv.ModRevision != rev.Main {
			problems = append(problems, fmt.Sprintf("db: revision %d_%d holds key %q modified at revision %d", rev.Main, rev.Sub, kv.Key, kv.ModRevision))
		}
		return nil
	})
	return problems
}

// checkAcross compares the files with each other: the database may not have applied entries the
// WAL does not have, and must cover the newest snapshot.
func checkAcross(r *CheckReport, in *wal.Inspection, newest *snapFile, dataDir string) {
	if err := wal.CheckCovers(schema.WALDir(dataDir), in.State, in.LastIndex, r.ConsistentIndex, r.ConsistentTerm); err != nil {
		r.problem("db and wal: %v; a member refuses to start on this", err)
	}
	if newest != nil && r.ConsistentIndex < newest.index {
		pending := schema.SnapDBPath(dataDir, newest.index)
		if _, err := os.Stat(pending); err == nil {
			r.note("db: a database received with snapshot %d is waiting in %s; a start installs it", newest.index, filepath.Base(pending))
		} else {
			r.problem("db and snap: the database (index %d) is older than the newest snapshot (index %d)", r.ConsistentIndex, newest.index)
		}
	}
	base := uint64(0)
	if newest != nil {
		base = newest.index
	}
	if in.FirstIndex > base+1 && in.FirstIndex > r.ConsistentIndex+1 {
		r.problem("wal: entries %d to %d are in neither a snapshot nor the WAL (it starts at %d)", max(base, r.ConsistentIndex)+1, in.FirstIndex-1, in.FirstIndex)
	}
}
