package etcdserver

import (
	"fmt"
	"slices"

	"go.etcd.io/raft/v3/raftpb"
)

// forceNewCluster is --force-new-cluster, upstream's disaster recovery: the member keeps its
// data and cluster ID, drops the uncommitted tail of its log, and commits (locally, with no
// quorum needed) the removal of every other member, so it restarts as a one-member cluster.
// The new entries and the commit index are written to the WAL before raft starts, so a crash
// right after leaves the same one-member cluster.
func (s *Server) forceNewCluster(sn raftpb.Snapshot, st raftpb.HardState, ents []raftpb.Entry, cindex uint64) (raftpb.HardState, []raftpb.Entry, error) {
	walCommit := st.Commit
	// The database may hold entries whose commit never reached the WAL's hard state.
	st.Commit = max(st.Commit, cindex)
	for i, e := range ents {
		if e.Index > st.Commit {
			s.log.Info("discarding uncommitted WAL entries", "entry-index", e.Index, "commit-index-from-wal", st.Commit,
				"number-of-discarded-entries", len(ents)-i)
			ents = ents[:i]
			break
		}
	}
	next := st.Commit + 1
	if n := len(ents); n > 0 && ents[n-1].Index >= next {
		next = ents[n-1].Index + 1
	}
	var added []raftpb.Entry
	for _, id := range memberIDsInLog(sn, ents) {
		if id == s.id {
			continue
		}
		cc := raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode, NodeID: id}
		data, err := cc.Marshal()
		if err != nil {
			return st, nil, err
		}
		added = append(added, raftpb.Entry{Type: raftpb.EntryConfChange, Term: st.Term, Index: next, Data: data})
		next++
	}
	if len(added) > 0 {
		st.Commit = added[len(added)-1].Index
	}
	if err := s.wal.Save(st, added); err != nil {
		return st, nil, fmt.Errorf("force new cluster: write WAL: %w", err)
	}
	s.log.Info("forcing restart member", "cluster-id", fmt.Sprintf("%x", s.mem.ClusterID()), "local-member-id", fmt.Sprintf("%x", s.id),
		"wal-commit-index", walCommit, "commit-index", st.Commit, "removed-members", len(added))
	return st, append(ents, added...), nil
}

// memberIDsInLog is raft's view of the membership at the end of the log: the snapshot's
// members with the log's configuration changes applied.
func memberIDsInLog(sn raftpb.Snapshot, ents []raftpb.Entry) []uint64 {
	ids := map[uint64]bool{}
	for _, id := range append(append([]uint64(nil), sn.Metadata.ConfState.Voters...), sn.Metadata.ConfState.Learners...) {
		ids[id] = true
	}
	for _, e := range ents {
		if e.Type != raftpb.EntryConfChange {
			continue
		}
		var cc raftpb.ConfChange
		if cc.Unmarshal(e.Data) != nil {
			continue
		}
		switch cc.Type {
		case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode:
			ids[cc.NodeID] = true
		case raftpb.ConfChangeRemoveNode:
			delete(ids, cc.NodeID)
		}
	}
	out := make([]uint64, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
