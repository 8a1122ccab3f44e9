package workload

import (
	"fmt"
)

// The checkers below judge recorded histories; they hold no connections, so each can be
// proven on a history with a planted fault.

// WatchEvent is one put event a watcher received.
type WatchEvent struct {
	Key         string
	ModRevision int64
}

// AckedPut is an acknowledged write of a watched key at the revision it was written.
type AckedPut struct {
	Key      string
	Revision int64
}

// RevRange is the revisions from From to To, both included.
type RevRange struct{ From, To int64 }

// CheckWatch judges what a watcher saw against the writes acknowledged under its prefix:
// events in revision order, none twice, and every acknowledged write seen unless its
// revision lies in an excused range (revisions compacted while the watcher was away).
// upTo bounds the check to revisions the watcher has had time to see.
func CheckWatch(events []WatchEvent, acked []AckedPut, excused []RevRange, upTo int64) []string {
	var problems []string
	seen := map[WatchEvent]bool{}
	var last int64
	for i, e := range events {
		if e.ModRevision < last {
			problems = append(problems, fmt.Sprintf("event %d (%s at revision %d) came after revision %d: out of order", i, e.Key, e.ModRevision, last))
		}
		last = max(last, e.ModRevision)
		if seen[e] {
			problems = append(problems, fmt.Sprintf("event %s at revision %d delivered twice", e.Key, e.ModRevision))
		}
		seen[e] = true
	}
	missing := 0
	var example string
	for _, a := range acked {
		if a.Revision > upTo || seen[WatchEvent{Key: a.Key, ModRevision: a.Revision}] || inRanges(a.Revision, excused) {
			continue
		}
		missing++
		if example == "" {
			example = fmt.Sprintf("%s at revision %d", a.Key, a.Revision)
		}
	}
	if missing > 0 {
		problems = append(problems, fmt.Sprintf("the watcher missed %d acknowledged writes, e.g. %s", missing, example))
	}
	return problems
}

func inRanges(rev int64, rs []RevRange) bool {
	for _, r := range rs {
		if rev >= r.From && rev <= r.To {
			return true
		}
	}
	return false
}
