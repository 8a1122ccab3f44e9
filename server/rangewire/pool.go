package rangewire

import (
	"sync"

	"google.golang.org/grpc/mem"
)

// SegmentSize is the size of the buffers a large answer is written into. An answer's last
// segment is partly empty, so the size bounds that waste: with 256 KiB segments a 1,000-key
// answer of 300 KiB held 512 KiB, and 64 of them at once put the member's peak resident memory
// at 1.3x upstream's (docs/performance.md). A gRPC write (256 KiB) takes several, each back in
// the pool once written. An answer smaller than a segment gets a buffer of its own size instead:
// garbage that small costs less than the pool's lock (gRPC does not pool below its own threshold
// either).
const SegmentSize = 64 << 10

// Pool keeps segments of sent answers for the next ones (a mem.BufferPool: gRPC puts a segment
// back when it has written it), up to a number of bytes. Every large answer is written into
// segments of one size, whatever its own, so a RangeStream's chunks, a paginated list's pages
// and any other answer reuse the same memory (buffers of an answer's own size served only
// answers as large: a 5 MiB page found a stream's 2 MiB buffers too small and made another).
type Pool struct {
	keep int // segments

	mu   sync.Mutex
	free []*[]byte
}

// NewPool makes a Pool that keeps up to keepBytes of segments.
func NewPool(keepBytes int) *Pool { return &Pool{keep: keepBytes / SegmentSize} }

// segment returns an empty segment, a kept one when there is one.
func (p *Pool) segment() *[]byte {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		*b = (*b)[:0]
		return b
	}
	p.mu.Unlock()
	b := make([]byte, 0, SegmentSize)
	return &b
}

// Get returns a buffer of length n: a segment when n is a segment's size (mem.BufferPool's
// method; the encoders take segments themselves).
func (p *Pool) Get(n int) *[]byte {
	if n == SegmentSize {
		b := p.segment()
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}

// Put takes a segment back, keeping it while the pool holds fewer than it may.
func (p *Pool) Put(b *[]byte) {
	if cap(*b) != SegmentSize {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < p.keep {
		p.free = append(p.free, b)
	}
}

// Kept is how many segments the pool holds and their bytes.
func (p *Pool) Kept() (n, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free), len(p.free) * SegmentSize
}

// writer appends an answer's bytes: a small answer (its size is known before) into a buffer of
// its own size, a large one into segments from the pool. Either way cur is the buffer being
// filled; only a segment (cap SegmentSize) is freed back to the pool.
type writer struct {
	p   *Pool
	out mem.BufferSlice
	cur *[]byte
}

// newWriter writes an answer of n bytes.
func (p *Pool) newWriter(n int) writer {
	w := writer{p: p}
	if n < SegmentSize {
		b := make([]byte, 0, n)
		w.cur = &b
	}
	return w
}

// room returns the next k bytes to write into when they fit in the current buffer (nil when
// they do not: write them with write instead).
func (w *writer) room(k int) []byte {
	if w.cur == nil || len(*w.cur)+k > cap(*w.cur) {
		return nil
	}
	b := *w.cur
	*w.cur = b[:len(b)+k]
	return (*w.cur)[len(b):]
}

// write appends b, across segments where it must.
func (w *writer) write(b []byte) {
	for len(b) > 0 {
		if w.cur == nil || len(*w.cur) == cap(*w.cur) {
			w.next()
		}
		c := *w.cur
		n := copy(c[len(c):cap(c)], b)
		*w.cur = c[:len(c)+n]
		b = b[n:]
	}
}

// next ends the current buffer and starts a segment.
func (w *writer) next() {
	w.end()
	w.cur = w.p.segment()
}

// end adds the current buffer, if it holds anything, to what was written.
func (w *writer) end() {
	switch {
	case w.cur == nil:
	case len(*w.cur) == 0:
		w.p.Put(w.cur)
	case cap(*w.cur) == SegmentSize:
		w.out = append(w.out, mem.NewBuffer(w.cur, w.p))
	default:
		w.out = append(w.out, mem.SliceBuffer(*w.cur))
	}
	w.cur = nil
}

// done returns what was written; the writer is not used after.
func (w *writer) done() mem.BufferSlice {
	w.end()
	out := w.out
	w.out = nil
	return out
}

// abandon gives the segments back (an answer that failed half-way).
func (w *writer) abandon() {
	w.done().Free()
}

var _ mem.BufferPool = (*Pool)(nil)
