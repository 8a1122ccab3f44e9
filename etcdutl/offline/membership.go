package offline

import (
	"fmt"

	"etcdx/server/membership"
	"etcdx/server/schema"

	bolt "go.etcd.io/bbolt"
)

// Memberships are a stopped member's two records of the cluster's membership: the v2 store's
// (the newest snapshot's document, then the WAL's committed configuration changes after it:
// what 3.5 and earlier go by) and the v3 store's (the database's members buckets: what 3.6 and
// later go by). Where they disagree, the upgrade to 3.6 changes the membership.
type Memberships struct {
	V2, V3 membership.State
}

// ReadMemberships reads both records of a stopped member's data dir without changing any file;
// walDir "" is the data dir's own.
func ReadMemberships(dataDir, walDir string) (Memberships, error) {
	if err := checkDataDir(dataDir); err != nil {
		return Memberships{}, err
	}
	v, err := readWALView(dataDir, walDir)
	if err != nil {
		return Memberships{}, err
	}
	db, err := openDB(schema.BackendPath(dataDir), true, DefaultLockWait)
	if err != nil {
		return Memberships{}, err
	}
	defer db.Close()
	return membershipsOf(v, db)
}

// membershipsOf is the v2 view (the newest snapshot's v2 store, then the WAL's committed conf
// changes after it; entries past the commit index may never take effect) and the database's.
func membershipsOf(v walView, db *bolt.DB) (Memberships, error) {
	var ms Memberships
	var after uint64
	if v.newest != nil {
		after = v.newest.Metadata.Index
		var err error
		if ms.V2, _, err = membership.DecodeV2Store(v.newest.Data); err != nil {
			return ms, fmt.Errorf("v2 store of snapshot %d: %w", after, err)
		}
	}
	var err error
	if ms.V2, err = membership.ReplayV2(ms.V2, v.ents, after, v.in.State.Commit); err != nil {
		return ms, err
	}
	v3, err := membership.Read(db)
	if err != nil {
		return ms, err
	}
	ms.V3 = v3.State()
	return ms, nil
}

// Drift is where the v3 store disagrees with the v2 store.
func (ms Memberships) Drift() membership.Drift { return membership.Compare(ms.V2, ms.V3) }
