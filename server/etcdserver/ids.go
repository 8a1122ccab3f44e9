package etcdserver

import (
	"crypto/sha1"
	"encoding/binary"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// MemberID derives a member's ID from its peer URLs and the cluster token, the way upstream
// does, so the same flags give the same IDs.
func MemberID(peerURLs []string, token string) uint64 {
	urls := append([]string(nil), peerURLs...)
	sort.Strings(urls)
	b := []byte(strings.Join(urls, ""))
	b = append(b, []byte(token)...)
	h := sha1.Sum(b)
	return binary.BigEndian.Uint64(h[:8])
}

// ClusterID derives the cluster ID from the sorted member IDs.
func ClusterID(ids []uint64) uint64 {
	s := append([]uint64(nil), ids...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	b := make([]byte, 8*len(s))
	for i, id := range s {
		binary.BigEndian.PutUint64(b[8*i:], id)
	}
	h := sha1.Sum(b)
	return binary.BigEndian.Uint64(h[:8])
}

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
