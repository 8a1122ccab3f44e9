package auth

import (
	"bytes"
	"sort"

	"go.etcd.io/etcd/api/v3/authpb"
)

// span is a half-open key interval [begin, end); a nil end reaches past every key.
type span struct{ begin, end []byte }

// permSpan is the keys a granted permission covers: one key when RangeEnd is empty, every key
// from Key on when RangeEnd is "\x00", else [Key, RangeEnd).
func permSpan(key, rangeEnd []byte) span {
	switch {
	case len(rangeEnd) == 0:
		return span{key, append(append([]byte{}, key...), 0)}
	case isOpenEnded(rangeEnd):
		return span{key, nil}
	default:
		return span{key, rangeEnd}
	}
}

func isOpenEnded(end []byte) bool { return len(end) == 1 && end[0] == 0 }

// endLess orders ends, nil (unbounded) last.
func endLess(a, b []byte) bool {
	if a == nil {
		return false
	}
	return b == nil || bytes.Compare(a, b) < 0
}

// rangeSet is a union of spans kept sorted, disjoint and with touching spans joined, so a
// request is covered exactly when one member span holds all of it.
type rangeSet []span

func newRangeSet(spans []span) rangeSet {
	sort.Slice(spans, func(i, j int) bool { return bytes.Compare(spans[i].begin, spans[j].begin) < 0 })
	var out rangeSet
	for _, s := range spans {
		if s.end != nil && bytes.Compare(s.begin, s.end) >= 0 {
			continue // empty
		}
		if n := len(out); n > 0 {
			last := &out[n-1]
			// Overlapping or touching the previous span: extend it.
			if last.end == nil || bytes.Compare(s.begin, last.end) <= 0 {
				if endLess(last.end, s.end) {
					last.end = s.end
				}
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// find returns the span that could hold key: the last one beginning at or before it.
func (rs rangeSet) find(key []byte) (span, bool) {
	i := sort.Search(len(rs), func(i int) bool { return bytes.Compare(rs[i].begin, key) > 0 })
	if i == 0 {
		return span{}, false
	}
	return rs[i-1], true
}

func (rs rangeSet) hasKey(key []byte) bool {
	s, ok := rs.find(key)
	return ok && (s.end == nil || bytes.Compare(key, s.end) < 0)
}

// covers says whether every key of [begin, end) is in the set (end nil: unbounded).
func (rs rangeSet) covers(begin, end []byte) bool {
	s, ok := rs.find(begin)
	if !ok {
		return false
	}
	if s.end == nil {
		return true
	}
	if end == nil {
		return false
	}
	return bytes.Compare(begin, s.end) < 0 && bytes.Compare(end, s.end) <= 0
}

// userPerms are a user's read and write permissions, merged over all its roles.
type userPerms struct{ read, write rangeSet }

func mergePerms(u *authpb.User, roles map[string]*authpb.Role) *userPerms {
	var read, write []span
	for _, name := range u.Roles {
		r := roles[name]
		if r == nil {
			continue
		}
		for _, p := range r.KeyPermission {
			s := permSpan(p.Key, p.RangeEnd)
			if p.PermType == authpb.READ || p.PermType == authpb.READWRITE {
				read = append(read, s)
			}
			if p.PermType == authpb.WRITE || p.PermType == authpb.READWRITE {
				write = append(write, s)
			}
		}
	}
	return &userPerms{read: newRangeSet(read), write: newRangeSet(write)}
}

// allows answers a request for key (rangeEnd empty), [key, rangeEnd), or key onwards
// (rangeEnd "\x00").
func (p *userPerms) allows(write bool, key, rangeEnd []byte) bool {
	set := p.read
	if write {
		set = p.write
	}
	switch {
	case len(rangeEnd) == 0:
		return set.hasKey(key)
	case isOpenEnded(rangeEnd):
		return set.covers(key, nil)
	case bytes.Compare(key, rangeEnd) >= 0:
		// An empty range touches no key; upstream still asks for its first one.
		return set.hasKey(key)
	default:
		return set.covers(key, rangeEnd)
	}
}

// validPermRange is upstream's rule for a granted range: a key, and an end after it (or
// "\x00", or none).
func validPermRange(key, rangeEnd []byte) bool {
	if len(key) == 0 {
		return false
	}
	return len(rangeEnd) == 0 || isOpenEnded(rangeEnd) || bytes.Compare(key, rangeEnd) < 0
}
