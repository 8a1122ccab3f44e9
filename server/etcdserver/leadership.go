package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
)

// ErrBadTransferee means the requested new leader is not a voting member.
var ErrBadTransferee = errors.New("etcdserver: bad leader transferee")

// MoveLeader hands leadership to target (a voting member) and waits until it leads.
func (s *Server) MoveLeader(ctx context.Context, target uint64) error {
	if s.Leader() != s.id {
		return ErrNotLeader
	}
	if target == s.id {
		return nil
	}
	m := s.mem.Get(target)
	if m == nil || m.IsLearner {
		return ErrBadTransferee
	}
	return s.transferTo(ctx, target)
}

func (s *Server) transferTo(ctx context.Context, target uint64) error {
	start := time.Now()
	s.handover.begin()
	defer func() { s.handover.end(time.Now(), s.cfg.electionTimeout()) }()
	s.node.TransferLeadership(ctx, s.id, target)
	t := time.NewTicker(s.cfg.heartbeat())
	defer t.Stop()
	// Woken by the leader change itself (a stopping member drains only after the handover); the
	// ticker is a fallback.
	for {
		changed := s.leaders.Next()
		if s.Leader() == target {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("leadership transfer to %x: %w", target, ErrTimeout)
		case <-s.stopping:
			return ErrStopped
		case <-changed:
		case <-t.C:
		}
	}
	s.log.Info("leadership transferred", "from", fmt.Sprintf("%x", s.id), "to", fmt.Sprintf("%x", target), "took", time.Since(start))
	return nil
}

// TransferLeadershipAway moves leadership to the best voter (pickTransferee), if this member
// leads and has anyone to hand over to. Used before stopping so clients see no leaderless gap.
func (s *Server) TransferLeadershipAway(ctx context.Context) {
	if s.Leader() != s.id {
		return
	}
	var cands []transfereeCandidate
	for id, pr := range s.node.Status().Progress {
		if id == s.id || pr.IsLearner {
			continue
		}
		if m := s.mem.Get(id); m == nil || m.IsLearner {
			continue
		}
		cands = append(cands, transfereeCandidate{id: id, match: pr.Match, activeSince: s.tr.ActiveSince(id)})
	}
	best := pickTransferee(cands)
	if best == raft.None {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*s.cfg.electionTimeout())
	defer cancel()
	if err := s.transferTo(ctx, best); err != nil {
		s.log.Warn("leadership transfer before stopping failed", "error", err)
	}
}

// transfereeCandidate is what the choice of a new leader knows of a voter: how much of the log
// it has, and since when its peer connection has been up (zero: it is down).
type transfereeCandidate struct {
	id, match   uint64
	activeSince time.Time
}

// pickTransferee chooses whom a stopping leader hands over to: only a voter whose connection is
// up (a stopped member may still look up to date in raft's progress, and a handover to it
// leaves the cluster leaderless until an election timeout), the most up to date of those, then
// the longest connected (upstream's choice), then the lowest ID, so the choice is the same
// whatever order the candidates come in. raft.None when no one qualifies.
func pickTransferee(cands []transfereeCandidate) uint64 {
	var best *transfereeCandidate
	for i := range cands {
		c := &cands[i]
		if c.activeSince.IsZero() {
			continue
		}
		if best == nil || c.match > best.match ||
			c.match == best.match && (c.activeSince.Before(best.activeSince) || c.activeSince.Equal(best.activeSince) && c.id < best.id) {
			best = c
		}
	}
	if best == nil {
		return raft.None
	}
	return best.id
}
