package rangewire

import (
	"math/bits"
	"slices"
	"sync"

	"google.golang.org/grpc/mem"
)

// Pool keeps a few buffers of sent answers for the next ones (a mem.BufferPool: gRPC puts a
// buffer back when it has written it). It keeps at most keep buffers of at most maxSize bytes, the
// largest when it must choose, so a stream of chunks or a paginated list reuses the same few
// buffers while one huge answer is not held after it was sent. gRPC's own pool rounds each
// buffer up to a power of two and keeps any number of them, which held resident memory at
// nearly twice upstream's under large ranges.
type Pool struct {
	keep, maxSize int

	mu   sync.Mutex
	free []*[]byte // by capacity, smallest first
}

// smallest is the size below which buffers are not pooled: garbage that small costs less than
// the pool's lock (gRPC does not pool below its own threshold either).
const smallest = 64 << 10

// NewPool makes a Pool.
func NewPool(keep, maxSize int) *Pool { return &Pool{keep: keep, maxSize: maxSize} }

// Get returns a buffer of length n, a kept one when one is large enough.
func (p *Pool) Get(n int) *[]byte {
	if n >= smallest && n <= p.maxSize {
		p.mu.Lock()
		i, _ := slices.BinarySearchFunc(p.free, n, func(b *[]byte, n int) int { return cap(*b) - n })
		if i < len(p.free) {
			b := p.free[i]
			p.free = slices.Delete(p.free, i, i+1)
			p.mu.Unlock()
			*b = (*b)[:n]
			return b
		}
		p.mu.Unlock()
	}
	b := make([]byte, n, roundUp(n))
	return &b
}

// roundUp is the capacity a new buffer of n bytes gets: up to a sixteenth more (at least 64 KiB
// steps), so the next answer of nearly the same size (a page whose revisions have one more
// digit) fits in it.
func roundUp(n int) int {
	if n < smallest {
		return n
	}
	step := max(smallest, 1<<(bits.Len(uint(n))-5))
	return (n + step - 1) / step * step
}

// Put takes a buffer back, keeping it if it is among the keep largest.
func (p *Pool) Put(b *[]byte) {
	c := cap(*b)
	if c < smallest || c > p.maxSize || p.keep == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == p.keep {
		if cap(*p.free[0]) >= c {
			return
		}
		p.free = slices.Delete(p.free, 0, 1)
	}
	i, _ := slices.BinarySearchFunc(p.free, c, func(b *[]byte, c int) int { return cap(*b) - c })
	p.free = slices.Insert(p.free, i, b)
}

// Kept is how many buffers the pool holds and their bytes.
func (p *Pool) Kept() (n, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.free {
		bytes += cap(*b)
	}
	return len(p.free), bytes
}

var _ mem.BufferPool = (*Pool)(nil)
