package etcdserver

import (
	"testing"
	"time"
)

func TestIDGeneratorUniqueAndPrefixed(t *testing.T) {
	g := newIDGenerator(0xabcd1234, time.Now())
	seen := map[uint64]bool{}
	for i := 0; i < 10000; i++ {
		id := g.next()
		if seen[id] || id>>48 != 0x1234 {
			t.Fatalf("id %x repeated or without the member prefix", id)
		}
		seen[id] = true
	}
}
