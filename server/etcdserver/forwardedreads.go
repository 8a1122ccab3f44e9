package etcdserver

import (
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// A follower's read, confirmed by the follower and the leader.
//
// Raft's leader confirms a ReadIndex (ReadOnlySafe) with a heartbeat round: a heartbeat to
// every follower and their answers. A follower's linearizable read reaches the leader as a
// forwarded MsgReadIndex, and on a cluster of at most three voters that request is itself the
// word the round would get, since the leader and any one voting follower meet every quorum:
//
//   - a member's raft forwards a ReadIndex only to the leader of its current term: when it
//     sent the request (after its client's read began) it had voted in no later election;
//   - the leader, still leading in its term when it takes its commit index, had voted in none
//     either;
//   - every quorum holds one of the two, so no later leader was elected, or committed a write,
//     before the read began; the leader's commit index, once it holds an entry of its own
//     term, covers every write acknowledged before then.
//
// So the leader answers at once with raft's commit index (two peer messages instead of six);
// the follower's raft takes the answer as it takes raft's own (MsgReadIndexResp), whatever its
// implementation. Larger clusters, joint configurations, learners, a leader without a committed
// entry of its term, and the leader's own reads go through raft's round as before. The leader's
// own reads are not confirmed by one follower's heartbeat outside raft: such a heartbeat, sent
// by a member whose raft loop has stalled (a disk that does not answer), would keep resetting
// the followers' election timers and hold off the election that should replace it.

// answerForwardedRead answers a forwarded ReadIndex without a heartbeat round when pairQuorum
// allows it; false: the message is raft's to handle.
func (s *Server) answerForwardedRead(m raftpb.Message) bool {
	if len(m.Entries) != 1 || m.From == raft.None || m.From == s.id {
		return false
	}
	st := s.node.Status()
	commitTerm, err := s.storage.Term(st.Commit)
	if err != nil || !pairQuorum(st, commitTerm, m.From) {
		return false
	}
	resp := []raftpb.Message{forwardedReadAnswer(st, m)}
	s.peerStats.sending(resp, time.Now())
	s.tr.Send(resp)
	return true
}

// forwardedReadAnswer is the answer raft's leader would send after its round: the request's
// context and the commit index, in the leader's term.
func forwardedReadAnswer(st raft.Status, m raftpb.Message) raftpb.Message {
	return raftpb.Message{Type: raftpb.MsgReadIndexResp, From: st.ID, To: m.From, Term: st.Term, Index: st.Commit, Entries: m.Entries}
}

// pairQuorum reports whether a leader whose raft status is st, and whose committed entry at
// st.Commit has term commitTerm, may take voter peer's forwarded ReadIndex for a quorum's word: the two
// meet every quorum of a simple (not joint) configuration, and the leader has committed an entry of its
// own term (as raft requires of any read index).
func pairQuorum(st raft.Status, commitTerm, peer uint64) bool {
	if st.RaftState != raft.StateLeader || st.Term == 0 || commitTerm != st.Term {
		return false
	}
	if len(st.Config.Voters[1]) > 0 {
		return false // joint configuration: two quorums to satisfy
	}
	voters := st.Config.Voters[0]
	_, leaderVotes := voters[st.ID]
	_, peerVotes := voters[peer]
	if !leaderVotes || !peerVotes || peer == st.ID {
		return false
	}
	// Two members are a quorum of at most three voters.
	return len(voters) <= 3
}
