package etcdserver

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/compactor"
)

// autoCompact runs on the leader: at every interval of the retention rule (package compactor),
// it proposes the compaction the rule names.
func (s *Server) autoCompact() {
	defer s.wg.Done()
	period, keepRevs, err := compactor.ParseRetention(s.cfg.AutoCompactionMode, s.cfg.AutoCompactionRetention)
	rule := compactor.Retention{Period: period, Revisions: keepRevs}
	if err != nil || rule.Off() {
		return
	}
	t := time.NewTicker(rule.Interval())
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.stopping:
			return
		}
		if s.Leader() != s.id {
			rule.Forget()
			continue
		}
		target := rule.Next(time.Now(), s.kv.Rev(), s.kv.CompactRev())
		if target == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
		_, err := s.Compact(ctx, &pb.CompactionRequest{Revision: target})
		cancel()
		if err != nil {
			s.log.Warn("auto compaction failed", "revision", target, "error", err)
			continue
		}
		s.log.Info("auto compaction", "mode", s.cfg.AutoCompactionMode, "retention", s.cfg.AutoCompactionRetention, "compact-revision", target)
	}
}
