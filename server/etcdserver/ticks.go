package etcdserver

import (
	"fmt"
	"time"
)

// adjustTicks fast-forwards the election timer at start, as upstream, so the first election
// does not wait a whole election timeout: at once for a single-member cluster, and once peers
// are connected for a larger one (--initial-election-tick-advance; a single member always
// advances, as upstream).
func (s *Server) adjustTicks() {
	// A new cluster's members are known from --initial-cluster until their entries apply.
	members := max(len(s.mem.List()), len(s.cfg.InitialCluster))
	if members == 1 {
		ticks := s.cfg.ElectionTicks - 1
		s.log.Info("started as single-node; fast-forwarding election ticks", "local-member-id", fmt.Sprintf("%x", s.id),
			"forward-ticks", ticks, "forward-duration", s.ticksDuration(ticks), "election-ticks", s.cfg.ElectionTicks,
			"election-timeout", s.ticksDuration(s.cfg.ElectionTicks))
		s.advanceTicks(ticks)
		return
	}
	if !s.cfg.InitialElectionTickAdvance {
		s.log.Info("skipping initial election tick advance", "election-ticks", s.cfg.ElectionTicks)
		return
	}
	s.log.Info("starting initial election tick advance", "election-ticks", s.cfg.ElectionTicks)
	// Wait (up to upstream's 5 s) until the other members' streams are up; advancing before
	// would only start an election nobody can answer.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-s.stopping:
			return
		}
		if active := s.tr.ActivePeers(); active > 1 {
			ticks := s.cfg.ElectionTicks - 2
			s.log.Info("initialized peer connections; fast-forwarding election ticks", "local-member-id", fmt.Sprintf("%x", s.id),
				"forward-ticks", ticks, "forward-duration", s.ticksDuration(ticks), "election-ticks", s.cfg.ElectionTicks,
				"election-timeout", s.ticksDuration(s.cfg.ElectionTicks), "active-remote-members", active)
			s.advanceTicks(ticks)
			return
		}
	}
}

func (s *Server) ticksDuration(ticks int) string {
	return (time.Duration(ticks) * s.cfg.heartbeat()).String()
}

// advanceTicks ticks raft n times at once (raft.Node.Tick is safe from any goroutine).
func (s *Server) advanceTicks(n int) {
	for i := 0; i < n; i++ {
		s.node.Tick()
	}
}
