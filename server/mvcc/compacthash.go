package mvcc

import (
	"hash"
	"hash/crc32"
	"sync"

	"etcdx/server/schema"
)

// compactHashesKept is how many compactions' hashes a store remembers, as upstream.
const compactHashesKept = 10

// CompactHash is the hash of the key bucket a compaction computed while it ran: over what it
// read up to its revision, as upstream's compaction hashes it. HashKV at that revision answers
// with it (upstream's members compare these across the cluster: --compact-hash-check-time).
type CompactHash struct {
	Hash uint32
	// CompactRevision is the compaction before this one (upstream reports that one).
	CompactRevision int64
	Revision        int64
}

// compactHashes are the last compactions' hashes, oldest first.
type compactHashes struct {
	mu     sync.Mutex
	hashes []CompactHash
}

func (c *compactHashes) add(h CompactHash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hashes = append(c.hashes, h)
	if len(c.hashes) > compactHashesKept {
		c.hashes = c.hashes[len(c.hashes)-compactHashesKept:]
	}
}

func (c *compactHashes) at(rev int64) (CompactHash, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hashes {
		if h.Revision == rev {
			return h, true
		}
	}
	return CompactHash{}, false
}

// kvHasher hashes key-bucket records up to rev as upstream's: the bucket's name, then every
// record above prev (the compaction before), those at or below it only where keep holds them
// (unless keep is empty), and never a deletion at prev itself (older releases removed those).
type kvHasher struct {
	h         hash.Hash32
	prev, rev int64
	keep      map[schema.Revision]struct{}
}

func newKVHasher(prev, rev int64, keep map[schema.Revision]struct{}) *kvHasher {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	h.Write(schema.Key)
	return &kvHasher{h: h, prev: prev, rev: rev, keep: keep}
}

func (k *kvHasher) write(key, value []byte) {
	r, tomb, err := schema.ParseRevisionKey(key)
	if err != nil || r.Main > k.rev {
		return
	}
	if r.Main <= k.prev && len(k.keep) > 0 {
		if _, ok := k.keep[r]; !ok {
			return
		}
	}
	if r.Main == k.prev && tomb {
		return
	}
	k.h.Write(key)
	k.h.Write(value)
}
