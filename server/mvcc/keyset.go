package mvcc

import (
	"bytes"
	"slices"
	"sort"
)

// keySet is the union of some watchers' keys and ranges, as sorted disjoint intervals, for a
// catch-up to skip changes none of them watches without asking each.
type keySet struct {
	spans []keySpan
}

// keySpan is [from, to); a nil to is unbounded.
type keySpan struct {
	from, to []byte
}

func newKeySet(ws []*watcher) keySet {
	spans := make([]keySpan, 0, len(ws))
	for _, w := range ws {
		switch {
		case w.end == nil: // one key
			spans = append(spans, keySpan{w.key, append(w.key[:len(w.key):len(w.key)], 0)})
		case len(w.end) == 0: // every key from w.key on
			spans = append(spans, keySpan{w.key, nil})
		case bytes.Compare(w.key, w.end) < 0:
			spans = append(spans, keySpan{w.key, w.end})
		}
	}
	slices.SortFunc(spans, func(a, b keySpan) int { return bytes.Compare(a.from, b.from) })
	var merged []keySpan
	for _, sp := range spans {
		if n := len(merged); n > 0 && (merged[n-1].to == nil || bytes.Compare(sp.from, merged[n-1].to) <= 0) {
			if last := &merged[n-1]; last.to != nil && (sp.to == nil || bytes.Compare(sp.to, last.to) > 0) {
				last.to = sp.to
			}
			continue
		}
		merged = append(merged, sp)
	}
	return keySet{merged}
}

// has reports whether key is in one of the set's intervals.
func (s keySet) has(key []byte) bool {
	// the last span starting at or before key
	i := sort.Search(len(s.spans), func(i int) bool { return bytes.Compare(s.spans[i].from, key) > 0 }) - 1
	return i >= 0 && (s.spans[i].to == nil || bytes.Compare(key, s.spans[i].to) < 0)
}
