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
// wait for a commit index it already passed. The first clause of each error is upstream's own
// wording for the invariant (its ETCD_VERIFY check). Both the member at start and etcdutl check
// use this.
func CheckCovers(dir string, st raftpb.HardState, lastIndex, cindex, cterm uint64) error {
	switch {
	case cindex > st.Commit:
		return fmt.Errorf("backend.ConsistentIndex (%d) must be <= WAL.HardState.commit (%d): the database has applied the log up to index %d "+
			"but the WAL in %s ends at commit index %d (last entry %d), so it was cut short or replaced",
			cindex, st.Commit, cindex, dir, st.Commit, lastIndex)
	case cterm > st.Term:
		return fmt.Errorf("backend.Term (%d) must be <= WAL.HardState.term (%d): the database has applied entries of a later term than the WAL in %s has seen",
			cterm, st.Term, dir)
	}
	return nil
}
