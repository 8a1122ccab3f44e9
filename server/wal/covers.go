package wal

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
)

// CheckCovers says whether the WAL in dir, whose last hard state is st and last entry
// lastIndex, holds everything a database that applied the log up to (cindex, cterm) has seen.
// When it does not (a WAL cut short, restored from an older copy, or taken from another data
// dir), raft would restart from the shorter log while the database is ahead of it: the member
// could vote and acknowledge as if it had never seen entries it applied, and its apply loop would
// wait for a commit index it already passed. Upstream's ETCD_VERIFY check compares with the hard
// state's commit index alone, which a power cut can leave behind the database on a sound data
// dir (the in-process simulation found it); ours compares with what the WAL holds. Both the
// member at start and etcdutl check use this.
func CheckCovers(dir string, st raftpb.HardState, lastIndex, cindex, cterm uint64) error {
	// The WAL covers what it holds: its entries, and the commit index of its hard state (which
	// may be the snapshot's, with no entry after it). The hard state's commit alone may lag the
	// database: raft does not sync a hard state whose only change is the commit index, so after
	// a power cut the database can have applied entries the WAL holds past its last synced
	// commit. Raft learns the commit again from the leader (or, alone, by committing anew).
	switch covered := max(st.Commit, lastIndex); {
	case cindex > covered:
		return fmt.Errorf("backend.ConsistentIndex (%d) must be <= the WAL's last index (%d): the database has applied the log up to index %d "+
			"but the WAL in %s ends at index %d (commit index %d), so it was cut short or replaced",
			cindex, covered, cindex, dir, covered, st.Commit)
	case cterm > st.Term:
		return fmt.Errorf("backend.Term (%d) must be <= WAL.HardState.term (%d): the database has applied entries of a later term than the WAL in %s has seen",
			cterm, st.Term, dir)
	}
	return nil
}
