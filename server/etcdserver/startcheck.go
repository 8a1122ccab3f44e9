package etcdserver

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/wal"
)

// checkLogCoversDB refuses a data dir whose database has applied entries its WAL no longer
// holds (wal.CheckCovers), naming the repair. Upstream starts on such a dir and then hangs.
// ents are the WAL's entries after the snapshot the member starts from (snapIndex, 0 for none):
// the WAL holds the log up to the snapshot too, though no entry of it is left to read.
func checkLogCoversDB(id uint64, walDir string, st raftpb.HardState, snapIndex uint64, ents []raftpb.Entry, consistent func() (uint64, uint64)) error {
	cindex, cterm := consistent()
	last := snapIndex
	if len(ents) > 0 {
		last = ents[len(ents)-1].Index
	}
	if err := wal.CheckCovers(walDir, st, last, cindex, cterm); err != nil {
		return fmt.Errorf("%w; %s", err, repairHint(id))
	}
	return nil
}

// repairHint is what an operator does about a data dir whose files disagree: nothing in it can
// be trusted to rejoin as it is.
func repairHint(id uint64) string {
	return fmt.Sprintf("to repair, remove the member (etcdctl member remove %x) and add it back with an empty data dir, "+
		"or restore the data dir from a snapshot (etcdutl snapshot restore)", id)
}
