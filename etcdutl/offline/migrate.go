package offline

import (
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/backend"
	"etcdx/server/schema"
	"etcdx/server/version"
	"etcdx/server/wal"
)

// MigrateResult says what a migration found and did.
type MigrateResult struct {
	From, To version.Level
	Actions  []string
	// ClusterFrom/ClusterTo are set when a downgrade also lowered the recorded cluster version.
	ClusterFrom, ClusterTo version.Level
	// Forced lists WAL entries the target cannot apply that --force let through.
	Forced []string
	// NoPlan is why no migration leads to the target (a version this etcdutl does not know, on
	// either side); with --force the storage version was then written as the target anyway.
	NoPlan error
}

// migrate moves a stopped member's storage to target, one level at a time, in one bbolt
// transaction. Going down also lowers the cluster version recorded in the data to target, so a
// target-level binary can start on it (in a running multi-member cluster, use the online
// downgrade instead: the other members would refuse this member). It refuses when the WAL holds
// entries not yet applied to the database that the target level cannot apply, unless force.
func migrate(dataDir string, target version.Level, force bool, wait time.Duration) (*MigrateResult, error) {
	if err := checkDataDir(dataDir); err != nil {
		return nil, err
	}
	if !knows(target) && !force {
		return nil, fmt.Errorf("--target-version %s is not a version this etcdutl knows (%s to %s); --force writes it as the storage version anyway", target, version.Known()[0], version.Local())
	}
	db, err := openDB(schema.BackendPath(dataDir), false, wait)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	res := &MigrateResult{To: target}
	var applied uint64
	err = backend.SafeView(db, func(tx *bolt.Tx) error {
		var err error
		if res.From, err = schema.Read(tx); err != nil {
			return err
		}
		applied, _ = schema.ReadConsistentIndex(tx)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if res.From == target {
		return res, nil // upstream's "storage version up-to-date", whatever the version
	}
	if !knows(res.From) && !force {
		return nil, fmt.Errorf("the data has storage version %s, which this etcdutl does not know; use a newer etcdutl (or --force to overwrite it)", res.From)
	}
	blocking, err := unappliedNewerEntries(dataDir, applied, target)
	if err != nil {
		return nil, err
	}
	if len(blocking) > 0 {
		if !force {
			return nil, fmt.Errorf("the WAL holds entries after the last applied index %d that etcd %s cannot apply (%s); start the member on its current binary until it has applied them, or pass --force to migrate anyway",
				applied, target, blocking[0])
		}
		res.Forced = blocking
	}
	err = backend.SafeUpdate(db, func(tx *bolt.Tx) error {
		var done []string
		var err error
		if knows(res.From) && knows(target) {
			_, done, err = schema.Migrate(tx, target)
		} else {
			err = fmt.Errorf("cannot create migration plan: version %q is not supported", target.Full()) // upstream's words
		}
		if err != nil && force && (!knows(res.From) || !knows(target)) {
			// Upstream's --force: no plan leads there, the version is written as asked.
			res.NoPlan = err
			what, err := schema.ForceStorageVersion(tx, target)
			if err != nil {
				return err
			}
			res.Actions = []string{what}
			return nil
		}
		if err != nil {
			return err
		}
		res.Actions = done
		cv, err := schema.ReadClusterVersion(tx)
		if err != nil {
			return err
		}
		if !cv.IsZero() && target.Less(cv) {
			res.ClusterFrom, res.ClusterTo = cv, target
			return schema.PutClusterVersion(schema.TxWriter(tx), target)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w", schema.BackendPath(dataDir), err)
	}
	return res, nil
}

// knows reports whether this etcdutl migrates storage to or from l: the levels up to its own,
// as upstream's etcdutl knows no release after its own (3.6's takes 3.7 only with --force).
func knows(l version.Level) bool { return version.IsKnown(l) && !version.Local().Less(l) }

// unappliedNewerEntries describes the WAL entries after applied that need a level above target:
// today, cluster version changes to a version above it.
func unappliedNewerEntries(dataDir string, applied uint64, target version.Level) ([]string, error) {
	if _, err := os.Stat(schema.WALDir(dataDir)); os.IsNotExist(err) {
		return nil, nil
	}
	ents, err := wal.Entries(schema.WALDir(dataDir))
	if err != nil {
		return nil, fmt.Errorf("read the WAL: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.Index <= applied || e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
			continue
		}
		var r pb.InternalRaftRequest
		if err := r.Unmarshal(e.Data); err != nil {
			return nil, fmt.Errorf("WAL entry %d does not decode: %w", e.Index, err)
		}
		if r.ClusterVersionSet != nil {
			if l, err := version.ParseLevel(r.ClusterVersionSet.Ver); err == nil && target.Less(l) {
				out = append(out, fmt.Sprintf("entry %d sets the cluster version to %s", e.Index, l))
			}
		}
	}
	return out, nil
}
