package judge

import "fmt"

const (
	// WatchOutOfOrder: a watcher delivered a revision after a later one, or the changes of one
	// revision in another order than the store made them.
	WatchOutOfOrder Check = "watch-out-of-order"
	// WatchDuplicate: a watcher delivered the same change (key and revision) twice.
	WatchDuplicate Check = "watch-duplicate"
	// WatchMissed: a change the watcher had to deliver (an acknowledged write, or with the
	// store's history any change in its range) never came.
	WatchMissed Check = "watch-missed"
	// WatchInvented: with the store's history known, the watcher delivered a change the store
	// never made (or another value, or a put for a delete).
	WatchInvented Check = "watch-invented"
)

// Event is one change of one key: a put of Value or a deletion, at revision Rev. Harnesses that
// record only keys and revisions leave Value empty on both sides.
type Event struct {
	Rev    int64
	Key    string
	Value  string
	Delete bool
}

// RevRange is the revisions From to To, both included.
type RevRange struct{ From, To int64 }

func (r RevRange) has(rev int64) bool { return rev >= r.From && rev <= r.To }

// WatchReference is what one watcher's events are judged against.
type WatchReference struct {
	// History, when known, is every change the store made, by revision (read from the store
	// itself): the watcher must deliver exactly these, in this order, from From to UpTo, and
	// nothing the store did not make.
	History map[int64][]Event
	// Acked are writes acknowledged to clients, each of which the watcher must deliver.
	Acked []Event
	// From and UpTo bound the revisions the watcher must have delivered: from where it started
	// to where it had time to reach.
	From, UpTo int64
	// Excused are revisions the watcher may lack (compacted while it was away).
	Excused []RevRange
}

func (r WatchReference) owed(rev int64) bool {
	if rev < r.From || rev > r.UpTo {
		return false
	}
	for _, e := range r.Excused {
		if e.has(rev) {
			return false
		}
	}
	return true
}

type eventID struct {
	rev int64
	key string
}

// Watch judges what the watcher called name delivered (got, in delivery order) against ref:
// WatchOutOfOrder, WatchDuplicate, WatchMissed and, with the history, WatchInvented; one finding
// per check, with how many events it concerns and the first of them.
func Watch(name string, got []Event, ref WatchReference) []Finding {
	var out []Finding
	tally := map[Check]int{}
	first := map[Check]string{}
	note := func(c Check, format string, a ...any) {
		if tally[c] == 0 {
			first[c] = fmt.Sprintf(format, a...)
		}
		tally[c]++
	}
	seen := map[eventID]bool{}
	delivered := map[int64][]Event{}
	var last int64
	for i, e := range got {
		if e.Rev < last {
			note(WatchOutOfOrder, "event %d (%s at revision %d) came after revision %d", i, e.Key, e.Rev, last)
		}
		last = max(last, e.Rev)
		id := eventID{e.Rev, e.Key}
		if seen[id] {
			note(WatchDuplicate, "%s at revision %d delivered twice", e.Key, e.Rev)
		}
		seen[id] = true
		delivered[e.Rev] = append(delivered[e.Rev], e)
	}
	if ref.History != nil {
		for _, e := range got {
			if e.Rev < ref.From {
				note(WatchInvented, "%+v, before revision %d the watch started from", e, ref.From)
			} else if !contains(ref.History[e.Rev], e) {
				note(WatchInvented, "%+v, which the store's revision %d does not hold (it holds %+v)", e, e.Rev, ref.History[e.Rev])
			}
		}
		for rev := ref.From; rev <= ref.UpTo; rev++ {
			want := ref.History[rev]
			if len(want) == 0 || !ref.owed(rev) {
				continue
			}
			missing := false
			for _, w := range want {
				if !contains(delivered[rev], w) {
					missing = true
					note(WatchMissed, "%+v (the store's revision %d)", w, rev)
				}
			}
			if !missing && !sameOrder(delivered[rev], want) {
				note(WatchOutOfOrder, "revision %d's changes came as %+v, the store made them as %+v", rev, delivered[rev], want)
			}
		}
	}
	for _, a := range ref.Acked {
		if ref.owed(a.Rev) && !seen[eventID{a.Rev, a.Key}] {
			note(WatchMissed, "the acknowledged write of %s at revision %d", a.Key, a.Rev)
		}
	}
	for _, c := range []Check{WatchOutOfOrder, WatchDuplicate, WatchMissed, WatchInvented} {
		if n := tally[c]; n > 0 {
			out = append(out, Finding{c, fmt.Sprintf("%s: %d events, first %s", name, n, first[c])})
		}
	}
	return out
}

func contains(es []Event, e Event) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// sameOrder reports whether got, holding want's events (perhaps more), holds them in want's order.
func sameOrder(got, want []Event) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
