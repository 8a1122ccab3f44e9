package judge

import (
	"fmt"
	"sort"
	"strings"
)

// Check names one of the checks.
type Check string

const (
	// LostWrite: an acknowledged write is missing from the store or holds another value.
	LostWrite Check = "lost-write"
	// RevisionWentBack: a client's request saw an older revision than an earlier request of the
	// same client (the store went back in time for it).
	RevisionWentBack Check = "revision-went-back"
	// HashMismatch: members disagree on the keyspace's hash at one revision.
	HashMismatch Check = "hash-mismatch"
	// WriteAppliedTwice: a key written once (a ledger key) shows more than one write: an entry
	// applied twice, by a replay or a snapshot labelled older than its data.
	WriteAppliedTwice Check = "write-applied-twice"
)

// Finding is one problem a check found.
type Finding struct {
	Check  Check
	Detail string
}

func (f Finding) String() string { return string(f.Check) + ": " + f.Detail }

// Strings renders findings one per line's worth, in order.
func Strings(fs []Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

// Fired reports the checks among fs, each once, in the order first found.
func Fired(fs []Finding) []Check {
	var out []Check
	seen := map[Check]bool{}
	for _, f := range fs {
		if !seen[f.Check] {
			seen[f.Check] = true
			out = append(out, f.Check)
		}
	}
	return out
}

// LostWrites returns the keys of acked (key -> the value acknowledged) that have (what the store
// holds) lacks or holds another value for, sorted: the LostWrite check, as keys, which reports
// list.
func LostWrites(acked, have map[string]string) []string {
	var lost []string
	for k, v := range acked {
		if got, ok := have[k]; !ok || got != v {
			lost = append(lost, k)
		}
	}
	sort.Strings(lost)
	return lost
}

// LostWriteFindings is LostWrites as findings.
func LostWriteFindings(acked, have map[string]string) []Finding {
	var out []Finding
	for _, k := range LostWrites(acked, have) {
		got, ok := have[k]
		detail := fmt.Sprintf("%s: acknowledged %q, the store has none", k, acked[k])
		if ok {
			detail = fmt.Sprintf("%s: acknowledged %q, the store has %q", k, acked[k], got)
		}
		out = append(out, Finding{LostWrite, detail})
	}
	return out
}

// Seen is the header revision one request of a client answered with (requests whose answer
// reflects the store at some point: linearizable reads and writes).
type Seen struct {
	Op       string
	Revision int64
}

// Monotonic checks, per client, that its requests (in the order it made them, each after the
// last had answered) never saw an older revision than an earlier one: the RevisionWentBack
// check, at most one finding per client (the first step back).
func Monotonic(byClient map[int][]Seen) []Finding {
	var out []Finding
	clients := make([]int, 0, len(byClient))
	for c := range byClient {
		clients = append(clients, c)
	}
	sort.Ints(clients)
	for _, c := range clients {
		var last Seen
		for _, s := range byClient[c] {
			if s.Revision < last.Revision {
				out = append(out, Finding{RevisionWentBack, fmt.Sprintf("client %d: %s saw revision %d after %s saw %d", c, s.Op, s.Revision, last.Op, last.Revision)})
				break
			}
			last = s
		}
	}
	return out
}

// MemberHash is a member's HashKV of the keyspace at a revision.
type MemberHash struct {
	Hash            uint32
	CompactRevision int64
	Revision        int64
}

// Hashes requires every member's hash of the keyspace, taken at one revision, to agree: the
// HashMismatch check, one finding naming each group of members that agree. Members at another
// revision disagree; a hash over another range of revisions (the same revision, another
// compaction point: a member answers at a compaction's revision with the hash that compaction
// kept, which a member restarted since has lost) is not comparable, as upstream's corruption
// checks skip it, and is no finding by itself.
func Hashes(byMember map[string]MemberHash) []Finding {
	if len(byMember) < 2 {
		return nil
	}
	groups := map[MemberHash][]string{}
	for m, h := range byMember {
		groups[h] = append(groups[h], m)
	}
	// Two groups disagree when they are at other revisions, or hash the same range differently.
	revisions, ranges := map[int64]bool{}, map[[2]int64]bool{}
	disagree := false
	for h := range groups {
		r := [2]int64{h.Revision, h.CompactRevision}
		disagree = disagree || ranges[r]
		revisions[h.Revision], ranges[r] = true, true
	}
	if !disagree && len(revisions) == 1 {
		return nil
	}
	var parts []string
	for h, ms := range groups {
		sort.Strings(ms)
		parts = append(parts, fmt.Sprintf("%s: hash %d (compacted at %d) at revision %d", strings.Join(ms, ","), h.Hash, h.CompactRevision, h.Revision))
	}
	sort.Strings(parts)
	return []Finding{{HashMismatch, "members disagree on the keyspace: " + strings.Join(parts, "; ")}}
}

// Record is what a store holds for one key: its version and the revisions that created and
// last modified it.
type Record struct {
	Key                          string
	Version, Create, ModRevision int64
}

// AppliedTwice is the rule for a key written exactly once: more than one version, or a last
// change at another revision than its creation, means a write was applied more than once.
func AppliedTwice(version, create, mod int64) bool { return version != 1 || create != mod }

// WrittenOnce checks keys each written exactly once (WriteAppliedTwice), one finding per key.
func WrittenOnce(name string, recs []Record) []Finding {
	var out []Finding
	for _, r := range recs {
		if AppliedTwice(r.Version, r.Create, r.ModRevision) {
			out = append(out, Finding{WriteAppliedTwice, fmt.Sprintf("%s: %s written once has version %d, created at %d, modified at %d", name, r.Key, r.Version, r.Create, r.ModRevision)})
		}
	}
	return out
}
