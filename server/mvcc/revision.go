// Package mvcc is the multi-version key-value store: every change gets a new revision, old
// revisions stay readable until compacted, and watchers receive changes in revision order.
//
// Values live in the backend's "key" bucket keyed by revision, exactly as upstream etcd stores
// them; an in-memory index maps each key to its revisions.
package mvcc

import (
	"encoding/binary"
	"fmt"
)

// Revision is a main revision (one per write transaction) and a sub revision (one per change
// inside it).
type Revision struct {
	Main int64
	Sub  int64
}

// GreaterThan orders revisions.
func (a Revision) GreaterThan(b Revision) bool {
	if a.Main != b.Main {
		return a.Main > b.Main
	}
	return a.Sub > b.Sub
}

const (
	revBytesLen       = 17 // 8 main + '_' + 8 sub
	markedRevBytesLen = revBytesLen + 1
	markTombstone     = 't'
)

// RevToBytes encodes a revision as the backend key.
func RevToBytes(r Revision, tombstone bool) []byte {
	n := revBytesLen
	if tombstone {
		n = markedRevBytesLen
	}
	b := make([]byte, n)
	binary.BigEndian.PutUint64(b[0:8], uint64(r.Main))
	b[8] = '_'
	binary.BigEndian.PutUint64(b[9:17], uint64(r.Sub))
	if tombstone {
		b[17] = markTombstone
	}
	return b
}

// BytesToRev decodes a backend key; it reports whether the key marks a tombstone.
func BytesToRev(b []byte) (Revision, bool, error) {
	if len(b) != revBytesLen && len(b) != markedRevBytesLen {
		return Revision{}, false, fmt.Errorf("mvcc: malformed revision key %x", b)
	}
	r := Revision{Main: int64(binary.BigEndian.Uint64(b[0:8])), Sub: int64(binary.BigEndian.Uint64(b[9:17]))}
	return r, len(b) == markedRevBytesLen && b[17] == markTombstone, nil
}
