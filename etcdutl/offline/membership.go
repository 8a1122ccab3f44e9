package offline

import (
	"fmt"
	"math"
	"sort"

	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/membership"
	"etcdx/server/schema"
	"etcdx/server/wal"
)

// Memberships are a stopped member's two records of the cluster's membership: the v2 store's
// (the newest snapshot's document, then the WAL's committed configuration changes after it:
// what 3.5 and earlier go by) and the v3 store's (the database's members buckets: what 3.6 and
// later go by). Where they disagree, the upgrade to 3.6 changes the membership.
type Memberships struct {
	V2, V3 membership.State
}

// MembershipDiff is where the v3 store disagrees with the v2 store.
type MembershipDiff struct {
	// Zombies are in the v3 store's members but removed from (or never in) the v2 store's
	// (etcd-io/etcd#20967).
	Zombies []membership.Member
	// Demoted are voters in the v2 store that the v3 store still holds as learners: promoted on
	// 3.5.1-3.5.19 (etcd-io/etcd#19557).
	Demoted []membership.Member
	// Missing are in the v2 store's members but not in the v3 store's.
	Missing []membership.Member
}

// Empty says the two stores agree.
func (d MembershipDiff) Empty() bool {
	return len(d.Zombies)+len(d.Demoted)+len(d.Missing) == 0
}

// ReadMemberships reads both records of a stopped member's data dir without changing any file;
// walDir "" is the data dir's own.
func ReadMemberships(dataDir, walDir string) (Memberships, error) {
	var ms Memberships
	if err := checkDataDir(dataDir); err != nil {
		return ms, err
	}
	if walDir == "" {
		walDir = schema.WALDir(dataDir)
	}
	in, err := wal.Inspect(walDir)
	if err != nil {
		return ms, err
	}
	var after uint64
	if newest := newestRecordedSnapshot(schema.SnapDir(dataDir), in); newest != nil {
		after = newest.Metadata.Index
		if ms.V2, _, err = membership.DecodeV2Store(newest.Data); err != nil {
			return ms, fmt.Errorf("v2 store of snapshot %d: %w", after, err)
		}
	}
	ents, err := wal.Entries(walDir)
	if err != nil {
		return ms, fmt.Errorf("failed to read WAL: %w", err)
	}
	v2 := membership.FromState(ms.V2)
	for _, e := range ents {
		// Entries past the commit index may never take effect.
		if e.Index <= after || e.Index > in.State.Commit || e.Type != raftpb.EntryConfChange {
			continue
		}
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			return ms, fmt.Errorf("WAL entry %d: conf change: %w", e.Index, err)
		}
		mem, promote, err := membership.DecodeConfChange(cc)
		if err != nil {
			return ms, fmt.Errorf("WAL entry %d: %w", e.Index, err)
		}
		// A change every member refused when it applied left the membership as it was. The
		// member's --max-learners is not known here: learner adds are not counted.
		if v2.Validate(cc, mem, promote, math.MaxInt) != nil {
			continue
		}
		v2.Apply(cc, mem)
	}
	ms.V2 = v2.State()

	db, err := openDB(schema.BackendPath(dataDir), true, DefaultLockWait)
	if err != nil {
		return ms, err
	}
	defer db.Close()
	v3, err := membership.Read(db)
	if err != nil {
		return ms, err
	}
	ms.V3 = v3.State()
	return ms, nil
}

// Diff compares the v3 store with the v2 store.
func (ms Memberships) Diff() MembershipDiff {
	var d MembershipDiff
	v2 := map[uint64]membership.Member{}
	for _, m := range ms.V2.Members {
		v2[m.ID] = m
	}
	v3 := map[uint64]bool{}
	for _, m := range ms.V3.Members {
		v3[m.ID] = true
		old, ok := v2[m.ID]
		switch {
		case !ok:
			d.Zombies = append(d.Zombies, m)
		case m.IsLearner && !old.IsLearner:
			d.Demoted = append(d.Demoted, m)
		}
	}
	for _, m := range ms.V2.Members {
		if !v3[m.ID] {
			d.Missing = append(d.Missing, m)
		}
	}
	for _, l := range [][]membership.Member{d.Zombies, d.Demoted, d.Missing} {
		sort.Slice(l, func(i, j int) bool { return l[i].ID < l[j].ID })
	}
	return d
}
