package compactor

import (
	"fmt"
	"strconv"
	"time"
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

// Retention is the leader's auto-compaction rule: keep the last Period of history (periodic
// mode) or the last Revisions revisions (revision mode). It is asked at every Interval with the
// time and the store's revisions and says where to compact; the caller's clock decides when
// (a ticker by default, the stepped simulation's clock there).
type Retention struct {
	Period    time.Duration
	Revisions int64
	samples   []sample
}

type sample struct {
	at  time.Time
	rev int64
}

// Off says the rule never compacts (a retention of 0).
func (r *Retention) Off() bool { return r.Period <= 0 && r.Revisions <= 0 }

// Interval is how often the rule is asked: a tenth of the period (at least a second), hourly
// for a period of an hour or more; five minutes in revision mode.
func (r *Retention) Interval() time.Duration {
	switch {
	case r.Period <= 0:
		return 5 * time.Minute
	case r.Period >= time.Hour:
		return time.Hour
	}
	return max(r.Period/10, time.Second)
}

// Next is the revision to compact at now, given the store's revision and compaction point, or 0
// for none. Periodic mode samples the revision at every call and compacts at the newest sample
// at least a period old; revision mode at rev - Revisions.
func (r *Retention) Next(now time.Time, rev, compacted int64) int64 {
	var target int64
	if r.Period > 0 {
		r.samples = append(r.samples, sample{now, rev})
		for len(r.samples) > 0 && now.Sub(r.samples[0].at) >= r.Period {
			target = r.samples[0].rev
			r.samples = r.samples[1:]
		}
	} else {
		target = rev - r.Revisions
	}
	if target <= compacted || target <= 0 {
		return 0
	}
	return target
}

// Forget drops the samples: a member that lost leadership starts over when it leads again, as
// the revisions it saw may not be the new leader's.
func (r *Retention) Forget() { r.samples = nil }
