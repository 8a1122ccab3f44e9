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
	s.node.TransferLeadership(ctx, s.id, target)
	t := time.NewTicker(s.cfg.heartbeat())
	defer t.Stop()
	// Woken by the leader change itself (a stopping member drains only after the handover); the
	// ticker is a fallback.
	for {
		changed := s.leaders.changed()
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

// TransferLeadershipAway moves leadership to the most up-to-date voter, if this member leads and
// has anyone to hand over to. Used before stopping so clients see no leaderless gap.
func (s *Server) TransferLeadershipAway(ctx context.Context) {
	if s.Leader() != s.id {
		return
	}
	st := s.node.Status()
	var best uint64
	var bestMatch uint64
	for id, pr := range st.Progress {
		if id == s.id || pr.IsLearner {
			continue
		}
		if m := s.mem.Get(id); m == nil || m.IsLearner {
			continue
		}
		if best == raft.None || pr.Match > bestMatch {
			best, bestMatch = id, pr.Match
		}
	}
	if best == raft.None {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*s.cfg.electionTimeout())
	defer cancel()
	if err := s.transferTo(ctx, best); err != nil {
		s.log.Warn("leadership transfer before stopping failed", "error", err)
	}
}
