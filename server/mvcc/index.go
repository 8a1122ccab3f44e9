package mvcc

import (
	"bytes"

	"github.com/tidwall/btree"

	"etcdx/server/schema"
)

// treeIndex maps keys to their keyIndex in key order. It is not safe for concurrent use; the
// store's lock guards it (so the tree takes no lock of its own). The tree loads keys given in
// order without a search each, which the index rebuild at start-up relies on.
type treeIndex struct {
	tree *btree.BTreeG[*keyIndex]
}

func newTreeIndex() *treeIndex {
	return &treeIndex{tree: btree.NewBTreeGOptions(func(a, b *keyIndex) bool { return bytes.Compare(a.key, b.key) < 0 },
		btree.Options{Degree: 32, NoLocks: true})}
}

func (ti *treeIndex) lookup(key []byte) *keyIndex {
	ki, _ := ti.tree.Get(&keyIndex{key: key})
	return ki
}

func (ti *treeIndex) put(key []byte, rev schema.Revision) {
	if ki := ti.lookup(key); ki != nil {
		ki.put(rev)
		return
	}
	ti.tree.Set(newKeyIndex(key, rev, rev, 1))
}

func (ti *treeIndex) tombstone(key []byte, rev schema.Revision) error {
	ki := ti.lookup(key)
	if ki == nil {
		return errKeyNotFound
	}
	return ki.tombstone(rev)
}

func (ti *treeIndex) get(key []byte, atRev int64) (mod, created schema.Revision, ver int64, err error) {
	ki := ti.lookup(key)
	if ki == nil {
		return schema.Revision{}, schema.Revision{}, 0, errKeyNotFound
	}
	return ki.get(atRev)
}

// visit calls fn for each keyIndex in [key, end); an empty non-nil end means "to the last key",
// a nil end means key alone.
func (ti *treeIndex) visit(key, end []byte, fn func(*keyIndex) bool) {
	if end == nil {
		if ki := ti.lookup(key); ki != nil {
			fn(ki)
		}
		return
	}
	ti.tree.Ascend(&keyIndex{key: key}, func(ki *keyIndex) bool {
		if len(end) > 0 && bytes.Compare(ki.key, end) >= 0 {
			return false
		}
		return fn(ki)
	})
}

type keyRev struct {
	key []byte
	rev schema.Revision
}

// revisions returns up to limit (0: all) live keys in the range at atRev, in out's memory (nil:
// new), and how many there are, or, without countPastLimit, at most limit+1 of them: enough to
// tell whether more follow without walking the rest of the range (which a chunked read would
// walk for every chunk). out lets readers reuse the memory of earlier pages.
func (ti *treeIndex) revisions(out []keyRev, key, end []byte, atRev int64, limit int, countPastLimit bool) ([]keyRev, int) {
	if limit > 0 && out == nil {
		out = make([]keyRev, 0, min(limit, 1024))
	}
	out = out[:0]
	total := 0
	ti.visit(key, end, func(ki *keyIndex) bool {
		if mod, _, _, err := ki.get(atRev); err == nil {
			if limit <= 0 || len(out) < limit {
				out = append(out, keyRev{key: ki.key, rev: mod})
			}
			total++
		}
		return countPastLimit || limit <= 0 || total <= limit
	})
	return out, total
}

// count is how many keys in the range are live at atRev (revisions' total, without the list: a
// count over a million keys built a 40 MB slice to throw away).
func (ti *treeIndex) count(key, end []byte, atRev int64) int {
	total := 0
	ti.visit(key, end, func(ki *keyIndex) bool {
		if _, _, _, err := ki.get(atRev); err == nil {
			total++
		}
		return true
	})
	return total
}

func (ti *treeIndex) compact(atRev int64) map[schema.Revision]struct{} {
	keep := make(map[schema.Revision]struct{})
	for from, done := []byte{}, false; !done; {
		from, done = ti.compactSome(atRev, from, 0, keep)
	}
	return keep
}

// compactSome compacts up to limit (0: all) keys from key from on, adding the revisions to keep
// to keep, and returns the key to go on from, or done. Keys compacted in separate calls give
// the same result as one call: what a key keeps depends on atRev alone.
func (ti *treeIndex) compactSome(atRev int64, from []byte, limit int, keep map[schema.Revision]struct{}) (next []byte, done bool) {
	var empty []*keyIndex
	n := 0
	done = true
	ti.tree.Ascend(&keyIndex{key: from}, func(ki *keyIndex) bool {
		if limit > 0 && n == limit {
			next, done = ki.key, false
			return false
		}
		n++
		if ki.compact(atRev, keep) {
			empty = append(empty, ki)
		}
		return true
	})
	for _, ki := range empty {
		ti.tree.Delete(ki)
	}
	return next, done
}

func (ti *treeIndex) keep(atRev int64) map[schema.Revision]struct{} {
	keep := make(map[schema.Revision]struct{})
	ti.tree.Scan(func(ki *keyIndex) bool {
		ki.keepAt(atRev, keep)
		return true
	})
	return keep
}

func (ti *treeIndex) len() int { return ti.tree.Len() }
