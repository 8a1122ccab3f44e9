package workload

import (
	"fmt"
	"sort"
	"strings"
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

// RevisionSeen is the header revision of one linearizable request of a client.
type RevisionSeen struct {
	Op       string
	Revision int64
}

// CheckMonotonic finds, per client, a linearizable request that saw an older revision than an
// earlier one of the same client: the store went back in time for it.
func CheckMonotonic(byClient map[int][]RevisionSeen) []string {
	var problems []string
	var clients []int
	for c := range byClient {
		clients = append(clients, c)
	}
	sort.Ints(clients)
	for _, c := range clients {
		var last RevisionSeen
		for _, r := range byClient[c] {
			if r.Revision < last.Revision {
				problems = append(problems, fmt.Sprintf("client %d: %s saw revision %d after %s saw %d", c, r.Op, r.Revision, last.Op, last.Revision))
				break
			}
			last = r
		}
	}
	return problems
}

// MemberHash is a member's HashKV at a revision.
type MemberHash struct {
	Hash            uint32
	CompactRevision int64
	Revision        int64
}

// CheckHashes requires every member's hash of the keyspace at one revision to agree.
func CheckHashes(byMember map[string]MemberHash) []string {
	if len(byMember) < 2 {
		return nil
	}
	groups := map[MemberHash][]string{}
	for m, h := range byMember {
		groups[h] = append(groups[h], m)
	}
	if len(groups) == 1 {
		return nil
	}
	var parts []string
	for h, ms := range groups {
		sort.Strings(ms)
		parts = append(parts, fmt.Sprintf("%s: hash %d (compacted at %d) at revision %d", strings.Join(ms, ","), h.Hash, h.CompactRevision, h.Revision))
	}
	sort.Strings(parts)
	return []string{"members disagree on the keyspace: " + strings.Join(parts, "; ")}
}
