package mvcc

import (
	"fmt"
	"strings"
	"testing"
)

// TestPageCountsStaySmall: a page is taken once, long keys are not remembered, and a full map
// starts afresh.
func TestPageCountsStaySmall(t *testing.T) {
	var c pageCounts
	p := pageStart{key: "a\x00", end: "b", rev: 5}
	c.put(p, 7)
	if n, ok := c.take(p); !ok || n != 7 {
		t.Fatalf("take = %d, %t; want 7, true", n, ok)
	}
	if _, ok := c.take(p); ok {
		t.Fatal("a page was taken twice")
	}
	long := pageStart{key: strings.Repeat("k", maxPageKeyBytes), end: "z", rev: 5}
	c.put(long, 1)
	if _, ok := c.take(long); ok {
		t.Fatal("a page with keys over the bound was remembered")
	}
	for i := 0; i <= maxPageCounts; i++ {
		c.put(pageStart{key: fmt.Sprint(i), rev: 1}, i)
	}
	if len(c.m) > maxPageCounts {
		t.Fatalf("%d pages remembered, bound %d", len(c.m), maxPageCounts)
	}
}
