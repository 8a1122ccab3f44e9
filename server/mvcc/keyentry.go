package mvcc

import "etcdx/server/schema"

// A key's index entry is made in one allocation with its first generation, its first revision
// and, up to 128 bytes, the key itself: what the collector follows from the tree to a key is
// one object instead of four (entry, key, generations, revisions). The index is nearly all of
// a member's live heap under Kubernetes' load (hundreds of thousands of keys), and marking it
// was most of the collector's work, which was a third of the members' CPU. Later generations
// and revisions past the first go to slices of their own, as before.
type entryHead struct {
	ki  keyIndex
	gen [1]generation
	rev [1]schema.Revision
}

// The entry with the key inline, by the key's length: each fills a size class of the allocator
// (160, 192, 224 and 256 bytes).
type (
	entry32 struct {
		entryHead
		key [32]byte
	}
	entry64 struct {
		entryHead
		key [64]byte
	}
	entry96 struct {
		entryHead
		key [96]byte
	}
	entry128 struct {
		entryHead
		key [128]byte
	}
)

// newKeyIndex is the entry of a key whose first revision in the index is rev, in a generation
// created at created whose version at rev is ver.
func newKeyIndex(key []byte, rev, created schema.Revision, ver int64) *keyIndex {
	var h *entryHead
	var inline []byte
	switch n := len(key); {
	case n <= 32:
		e := new(entry32)
		h, inline = &e.entryHead, e.key[:n:n]
	case n <= 64:
		e := new(entry64)
		h, inline = &e.entryHead, e.key[:n:n]
	case n <= 96:
		e := new(entry96)
		h, inline = &e.entryHead, e.key[:n:n]
	case n <= 128:
		e := new(entry128)
		h, inline = &e.entryHead, e.key[:n:n]
	default:
		h, inline = new(entryHead), make([]byte, n)
	}
	copy(inline, key)
	h.rev[0] = rev
	h.gen[0] = generation{ver: ver, created: created, revs: h.rev[:]}
	h.ki = keyIndex{key: inline, modified: rev, generations: h.gen[:]}
	return &h.ki
}
