package etcdserver

import (
	"sync/atomic"
	"time"
)

// idGenerator makes request and lease IDs unique across members and restarts: the member's low
// 16 bits, then a counter seeded from the clock.
type idGenerator struct {
	prefix uint64
	suffix atomic.Uint64
}

func newIDGenerator(member uint64, now time.Time) *idGenerator {
	g := &idGenerator{prefix: (member & 0xffff) << 48}
	ms := uint64(now.UnixNano()) / uint64(time.Millisecond)
	g.suffix.Store((ms & (1<<40 - 1)) << 8)
	return g
}

func (g *idGenerator) next() uint64 {
	return g.prefix | (g.suffix.Add(1) & (1<<48 - 1))
}
