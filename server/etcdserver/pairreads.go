package etcdserver

import (
	"slices"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// Reads confirmed by a pair: the leader and one follower.
//
// Raft's leader confirms a ReadIndex (ReadOnlySafe) with a heartbeat round: a heartbeat to
// every follower and their answers. On a cluster of at most three voters the leader and any
// one voting follower meet every quorum, so one follower's word is enough:
//
//   - a member's raft answers a heartbeat, and forwards a ReadIndex, only to the leader of its
//     current term: at that moment it had voted in no later election;
//   - the leader, still leading in its term when it takes its commit index, had voted in none
//     either;
//   - every quorum holds one of the two, so no later leader was elected, or committed a write,
//     before the later of the two moments; the leader's commit index, once it holds an entry
//     of its own term, covers every write acknowledged before then.
//
// Two uses, each after the read began:
//
//   - a follower's read reaches the leader as a forwarded MsgReadIndex, which is the follower's
//     word: the leader answers at once with its commit index (answerForwardedRead), where raft
//     would run a round; two messages instead of six;
//   - a leader's own read: the leader takes its commit index, then sends one heartbeat carrying
//     the round's context to the follower most likely to answer first, and its answer in the
//     leader's term confirms the read (startPairRound); the other followers are asked only if
//     that answer is late. Two messages instead of four, and no raft round on the leader.
//
// Either way the follower's raft sees the messages raft's leader sends (MsgReadIndexResp,
// MsgHeartbeat, the latter with no commit index to apply), so a follower of any implementation
// takes part. Larger clusters, joint configurations, learners, and a leader without a
// committed entry of its term go through raft's round as before.

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
// st.Commit has term commitTerm, may take voter peer's word for a quorum's: the two meet every
// quorum of a simple (not joint) configuration, and the leader has committed an entry of its
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

// pairFollowers are the leader's voting followers, the one most likely to answer first ahead:
// recently heard from, being replicated to (not probed or sent a snapshot), furthest along.
func pairFollowers(st raft.Status) []uint64 {
	var ids []uint64
	for id := range st.Config.Voters[0] {
		if id != st.ID {
			ids = append(ids, id)
		}
	}
	rank := func(id uint64) (bool, bool, uint64) {
		pr, ok := st.Progress[id]
		if !ok {
			return false, false, 0
		}
		return pr.RecentActive, pr.State == tracker.StateReplicate, pr.Match
	}
	slices.SortFunc(ids, func(a, b uint64) int {
		aa, ar, am := rank(a)
		ba, br, bm := rank(b)
		switch {
		case aa != ba:
			return boolOrder(ba) - boolOrder(aa)
		case ar != br:
			return boolOrder(br) - boolOrder(ar)
		case am != bm:
			if am > bm {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		return 1
	})
	return ids
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pairRound is a leader's read round waiting for one follower's answer.
type pairRound struct {
	ctx   string
	term  uint64
	index uint64 // the commit index taken before any heartbeat went out
	asked []uint64
	rest  []uint64 // followers asked only if the first answer is late
	done  chan struct{}
}

// pairRounds holds the leader's round in flight (one at a time: the read loop runs them).
type pairRounds struct {
	mu  sync.Mutex
	cur *pairRound
	// rtt is a moving average of the answers' delays, kept by the read loop alone.
	rtt time.Duration
}

// startPairRound takes the commit index and asks the first follower, on a leader where
// pairQuorum allows; nil: raft's round is the way.
func (s *Server) startPairRound(rctx []byte) *pairRound {
	st := s.node.Status()
	commitTerm, err := s.storage.Term(st.Commit)
	if err != nil {
		return nil
	}
	order := pairFollowers(st)
	if len(order) == 0 || !pairQuorum(st, commitTerm, order[0]) {
		return nil
	}
	p := &pairRound{ctx: string(rctx), term: st.Term, index: st.Commit, rest: order[1:], done: make(chan struct{})}
	s.pairs.mu.Lock()
	s.pairs.cur = p
	s.pairs.mu.Unlock()
	s.askPair(p, order[:1])
	return p
}

// askPair sends the round's heartbeat to the followers ids.
func (s *Server) askPair(p *pairRound, ids []uint64) {
	msgs := make([]raftpb.Message, 0, len(ids))
	s.pairs.mu.Lock()
	for _, id := range ids {
		p.asked = append(p.asked, id)
		msgs = append(msgs, pairHeartbeat(s.id, id, p.term, []byte(p.ctx)))
	}
	s.pairs.mu.Unlock()
	s.peerStats.sending(msgs, time.Now())
	s.tr.Send(msgs)
}

// pairHeartbeat is a round's heartbeat as raft's leader sends it, without a commit index: the
// follower's raft answers it with the context and applies nothing from it.
func pairHeartbeat(from, to, term uint64, ctx []byte) raftpb.Message {
	return raftpb.Message{Type: raftpb.MsgHeartbeat, From: from, To: to, Term: term, Context: ctx}
}

// pairAnswered takes a heartbeat's answer that confirms the round in flight (one of the asked
// followers, in the round's term); false: the message is raft's.
func (s *Server) pairAnswered(m raftpb.Message) bool {
	s.pairs.mu.Lock()
	defer s.pairs.mu.Unlock()
	p := s.pairs.cur
	if p == nil || m.Term != p.term || string(m.Context) != p.ctx || !slices.Contains(p.asked, m.From) {
		return false
	}
	s.pairs.cur = nil
	close(p.done)
	return true
}

// endPair forgets p (its answer, if it comes, goes to raft, which ignores it).
func (s *Server) endPair(p *pairRound) {
	s.pairs.mu.Lock()
	if s.pairs.cur == p {
		s.pairs.cur = nil
	}
	s.pairs.mu.Unlock()
}

// Bounds of how long a pair round waits for its first follower before asking the others:
// three times the answers' average delay, within these.
const (
	pairEscalateMin = time.Millisecond
	pairEscalateMax = 50 * time.Millisecond
)

func pairEscalate(rtt time.Duration) time.Duration {
	return min(max(3*rtt, pairEscalateMin), pairEscalateMax)
}

// awaitPair waits for p's answer: true with the read confirmed at p.index; false when none came
// within readIndexRetry (raft's round takes over) or the member is stopping.
func (s *Server) awaitPair(p *pairRound) bool {
	defer s.endPair(p)
	start := time.Now()
	escalate := time.NewTimer(pairEscalate(s.pairs.rtt))
	defer escalate.Stop()
	giveUp := time.NewTimer(readIndexRetry)
	defer giveUp.Stop()
	for {
		select {
		case <-p.done:
			// An average over about the last eight answers.
			s.pairs.rtt += (time.Since(start) - s.pairs.rtt) / 8
			return true
		case <-escalate.C:
			if len(p.rest) > 0 {
				s.askPair(p, p.rest)
				p.rest = nil
			}
		case <-giveUp.C:
			s.m.slowReads.Inc()
			return false
		case <-s.stopping:
			return false
		}
	}
}
