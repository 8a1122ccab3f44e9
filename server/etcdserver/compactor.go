package etcdserver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// ParseRetention reads --auto-compaction-retention as upstream 3.3+ does: a bare number is hours
// in periodic mode and revisions in revision mode; a duration ("30m", "24h") is periodic only.
func ParseRetention(mode, retention string) (period time.Duration, revisions int64, err error) {
	if retention == "" || retention == "0" {
		return 0, 0, nil
	}
	n, nerr := strconv.ParseInt(retention, 10, 64)
	switch mode {
	case "periodic":
		if nerr == nil {
			if n < 0 {
				return 0, 0, fmt.Errorf("invalid auto compaction retention %q: negative", retention)
			}
			return time.Duration(n) * time.Hour, 0, nil
		}
		d, err := time.ParseDuration(retention)
		if err != nil || d < 0 {
			return 0, 0, fmt.Errorf("invalid auto compaction retention %q: want hours or a duration like 30m", retention)
		}
		return d, 0, nil
	case "revision":
		if nerr != nil || n < 0 {
			return 0, 0, fmt.Errorf("invalid auto compaction retention %q: revision mode takes a number of revisions", retention)
		}
		return 0, n, nil
	default:
		return 0, 0, fmt.Errorf("unknown auto compaction mode %q (want periodic or revision)", mode)
	}
}

// autoCompact runs on the leader. Periodic mode keeps the last retention window of history,
// sampling the revision at every tenth of the window (at most hourly); revision mode keeps the
// last N revisions, checked every five minutes.
func (s *Server) autoCompact() {
	defer s.wg.Done()
	period, keepRevs, err := ParseRetention(s.cfg.AutoCompactionMode, s.cfg.AutoCompactionRetention)
	if err != nil || (period == 0 && keepRevs == 0) {
		return
	}
	interval := 5 * time.Minute
	if period > 0 {
		interval = period / 10
		if period >= time.Hour {
			interval = time.Hour
		}
		if interval < time.Second {
			interval = time.Second
		}
	}
	type sample struct {
		at  time.Time
		rev int64
	}
	var samples []sample
	last := int64(0)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.stopping:
			return
		}
		if s.Leader() != s.id {
			samples = nil
			continue
		}
		now, rev := time.Now(), s.kv.Rev()
		var target int64
		if period > 0 {
			samples = append(samples, sample{now, rev})
			for len(samples) > 0 && now.Sub(samples[0].at) >= period {
				target = samples[0].rev
				samples = samples[1:]
			}
		} else {
			target = rev - keepRevs
		}
		if target <= last || target <= s.kv.CompactRev() || target <= 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
		_, err := s.Compact(ctx, &pb.CompactionRequest{Revision: target})
		cancel()
		if err != nil {
			s.log.Warn("auto compaction failed", "revision", target, "error", err)
			continue
		}
		last = target
		s.log.Info("auto compaction", "mode", s.cfg.AutoCompactionMode, "retention", s.cfg.AutoCompactionRetention, "compact-revision", target)
	}
}
