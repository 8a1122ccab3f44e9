package backend

// VerifyFile walks the page tree of a bbolt file before anything reads it through bbolt. bbolt
// trusts its pages: a page that points back at an ancestor sends its cursors (and its own
// Check) round in circles for ever, and an element that points past its page makes it read
// outside the file. Guard catches panics and faults, not loops, so the offline tools verify the
// structure first. The layout is bbolt's (v1.4): 16-byte page headers (id, flags, count,
// overflow), 16-byte branch and leaf elements whose positions are relative to the element,
// buckets as 16-byte headers (root page, sequence) followed, for an inline bucket, by its page.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

const (
	boltMagic         = 0xED0CDAED
	boltVersion       = 2
	pageHeaderSize    = 16
	elementSize       = 16
	bucketHeaderSize  = 16
	branchPageFlag    = 0x01
	leafPageFlag      = 0x02
	bucketLeafFlag    = 0x01
	metaChecksumStart = pageHeaderSize + 56 // the checksum covers the meta fields before it
)

// boltMeta is what VerifyFile needs of a meta page.
type boltMeta struct {
	pageSize uint32
	root     uint64 // root bucket's page
	pgid     uint64 // high-water mark: pages at or past it are not in use
	txid     uint64
}

// readMeta decodes and checks the meta page at off; ok is false for a page bbolt would reject.
func readMeta(b []byte) (m boltMeta, ok bool) {
	if len(b) < metaChecksumStart+8 {
		return m, false
	}
	le := binary.LittleEndian
	body := b[pageHeaderSize:]
	if le.Uint32(body[0:]) != boltMagic || le.Uint32(body[4:]) != boltVersion {
		return m, false
	}
	h := fnv.New64a()
	h.Write(b[pageHeaderSize:metaChecksumStart])
	if h.Sum64() != le.Uint64(b[metaChecksumStart:]) {
		return m, false
	}
	m = boltMeta{pageSize: le.Uint32(body[8:]), root: le.Uint64(body[16:]), pgid: le.Uint64(body[40:]), txid: le.Uint64(body[48:])}
	return m, m.pageSize >= 512 && m.pageSize&(m.pageSize-1) == 0
}

// VerifyFile checks that every page reachable from the newest valid meta page lies inside the
// file and below the high-water mark, has a branch or leaf header naming itself, holds its
// elements, keys and values within its bounds, and is reached once (no cycles, no sharing).
// It reads pages one at a time and changes nothing.
func VerifyFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	corrupt := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, path, fmt.Sprintf(format, a...))
	}
	// The first meta page is at 0; the second at the page size the first declares, or at 4 KiB
	// when the first is unreadable (as bbolt looks for it).
	head := make([]byte, 4096)
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return err
	}
	metas := make([]boltMeta, 0, 2)
	if m, ok := readMeta(head); ok {
		metas = append(metas, m)
	}
	second := int64(4096)
	if len(metas) == 1 {
		second = int64(metas[0].pageSize)
	}
	buf := make([]byte, 4096)
	if n, _ := f.ReadAt(buf, second); n > 0 {
		if m, ok := readMeta(buf[:n]); ok {
			metas = append(metas, m)
		}
	}
	if len(metas) == 0 {
		return corrupt("no valid meta page")
	}
	meta := metas[0]
	for _, m := range metas[1:] {
		if m.txid > meta.txid {
			meta = m
		}
	}
	ps := int64(meta.pageSize)
	if meta.pgid*uint64(ps) > uint64(size) {
		return corrupt("the file (%d bytes) is shorter than its %d pages", size, meta.pgid)
	}
	w := &pageWalker{f: f, ps: ps, hwm: meta.pgid, seen: map[uint64]bool{}, corrupt: corrupt}
	return w.walk(meta.root)
}

type pageWalker struct {
	f       *os.File
	ps      int64
	hwm     uint64
	seen    map[uint64]bool
	corrupt func(string, ...any) error
}

// pageRef is a page to visit and the keys its subtree must lie within: [lo, hi), nil for no
// bound (a bucket's root page).
type pageRef struct {
	id     uint64
	lo, hi []byte
}

// walk visits the tree of pages under root without recursion (a deep or cyclic tree cannot
// exhaust the stack).
func (w *pageWalker) walk(root uint64) error {
	todo := []pageRef{{id: root}}
	for len(todo) > 0 {
		ref := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		children, err := w.page(ref)
		if err != nil {
			return err
		}
		todo = append(todo, children...)
	}
	return nil
}

// page checks page ref.id and returns the pages it points to.
func (w *pageWalker) page(ref pageRef) ([]pageRef, error) {
	id := ref.id
	if id < 2 || id >= w.hwm {
		return nil, w.corrupt("page %d is outside the pages in use (2 to %d)", id, w.hwm-1)
	}
	if w.seen[id] {
		return nil, w.corrupt("page %d is referenced more than once (a cycle or a shared page)", id)
	}
	hdr := make([]byte, pageHeaderSize)
	if _, err := w.f.ReadAt(hdr, int64(id)*w.ps); err != nil {
		return nil, w.corrupt("page %d: %v", id, err)
	}
	overflow := uint64(binary.LittleEndian.Uint32(hdr[12:]))
	if got := binary.LittleEndian.Uint64(hdr); got != id {
		return nil, w.corrupt("page %d says it is page %d", id, got)
	}
	if id+overflow >= w.hwm {
		return nil, w.corrupt("page %d overflows past the pages in use (%d more pages)", id, overflow)
	}
	for i := id; i <= id+overflow; i++ {
		w.seen[i] = true
	}
	b := make([]byte, int64(overflow+1)*w.ps)
	if _, err := w.f.ReadAt(b, int64(id)*w.ps); err != nil {
		return nil, w.corrupt("page %d: %v", id, err)
	}
	return w.elements(id, b, false, ref.lo, ref.hi)
}

// elements checks the elements of page b (a page, or an inline bucket's page) and returns the
// pages they point to. The keys of a page that is not inline must increase and lie in [lo, hi):
// bbolt checks that order when it rebuilds the free list of a file that has none (upstream's
// files, and ours), and it reports a violation by panicking in a goroutine of its own, where
// Guard cannot catch it.
func (w *pageWalker) elements(id uint64, b []byte, inline bool, lo, hi []byte) ([]pageRef, error) {
	le := binary.LittleEndian
	flags, count := le.Uint16(b[8:]), int(le.Uint16(b[10:]))
	// bbolt never writes an empty branch page, and its cursor reads a branch page's first child
	// without looking at the count: an empty one sends it down a page id from stale bytes (a
	// loop that grows its stack until memory runs out). An inline bucket is always one leaf.
	if flags != leafPageFlag && (flags != branchPageFlag || inline || count == 0) {
		return nil, w.corrupt("page %d: neither a leaf page nor a branch page with elements (flags %#x, %d elements)", id, flags, count)
	}
	if pageHeaderSize+count*elementSize > len(b) {
		return nil, w.corrupt("page %d: %d elements do not fit in it", id, count)
	}
	var children []pageRef
	var prev []byte
	checkKey := func(i int, key []byte) error {
		switch {
		case inline:
		case i > 0 && bytes.Compare(prev, key) >= 0:
			return w.corrupt("page %d: key %d (%x) is not after key %d (%x)", id, i, key, i-1, prev)
		case lo != nil && bytes.Compare(key, lo) < 0:
			return w.corrupt("page %d: key %d (%x) is before its parent's key (%x)", id, i, key, lo)
		case hi != nil && bytes.Compare(key, hi) >= 0:
			return w.corrupt("page %d: key %d (%x) is not before the parent's next key (%x)", id, i, key, hi)
		}
		prev = key
		return nil
	}
	for i := 0; i < count; i++ {
		at := pageHeaderSize + i*elementSize
		e := b[at : at+elementSize]
		switch {
		case flags == branchPageFlag:
			pos, ksize := int(le.Uint32(e[0:])), int(le.Uint32(e[4:]))
			if at+pos+ksize > len(b) || at+pos < 0 {
				return nil, w.corrupt("page %d: branch element %d runs past the page", id, i)
			}
			key := b[at+pos : at+pos+ksize]
			if err := checkKey(i, key); err != nil {
				return nil, err
			}
			// The child's keys lie from this key up to the next element's (or this page's bound).
			if n := len(children); n > 0 {
				children[n-1].hi = key
			}
			children = append(children, pageRef{id: le.Uint64(e[8:]), lo: key, hi: hi})
		case flags == leafPageFlag:
			eflags, pos, ksize, vsize := le.Uint32(e[0:]), int(le.Uint32(e[4:])), int(le.Uint32(e[8:])), int(le.Uint32(e[12:]))
			end := at + pos + ksize + vsize
			if end > len(b) || end < at {
				return nil, w.corrupt("page %d: leaf element %d runs past the page", id, i)
			}
			if err := checkKey(i, b[at+pos:at+pos+ksize]); err != nil {
				return nil, err
			}
			if eflags&bucketLeafFlag == 0 {
				continue
			}
			v := b[at+pos+ksize : end]
			if len(v) < bucketHeaderSize {
				return nil, w.corrupt("page %d: bucket %d has a %d-byte header", id, i, len(v))
			}
			if root := le.Uint64(v); root != 0 {
				children = append(children, pageRef{id: root}) // a bucket of its own: no bounds
				continue
			}
			if inline || len(v) < bucketHeaderSize+pageHeaderSize {
				return nil, w.corrupt("page %d: inline bucket %d is malformed", id, i)
			}
			more, err := w.elements(id, v[bucketHeaderSize:], true, nil, nil)
			if err != nil {
				return nil, err
			}
			children = append(children, more...)
		}
	}
	return children, nil
}
