package mvcc

import "sync"

// pageCounts carries the count of a paginated read from one page to the next. A range with a
// limit answers how many keys the whole range holds, which walks the index to the range's end
// for every page: a list of 100,000 keys in pages of 500 walked 10 million index entries. At a
// revision already written the keys live in a range never change, so the keys left after a page
// are its count less the keys it returned, and the next page (which starts just after the last
// key, at the same revision, as kube-apiserver and etcdctl ask) takes that count and walks only
// its own keys.
type pageCounts struct {
	mu sync.Mutex
	m  map[pageStart]int
}

// pageStart names the page that would start at key: the range's end and the revision read.
type pageStart struct {
	key, end string
	rev      int64
}

// maxPageCounts bounds the pages remembered; when full they are all forgotten (an entry is only
// worth the walk of one page). Pages whose start and end keys together are longer than
// maxPageKeyBytes are not remembered, so the map stays small whatever keys clients use.
const (
	maxPageCounts   = 256
	maxPageKeyBytes = 4 << 10
)

// take returns and forgets the count remembered for the page at p.
func (c *pageCounts) take(p pageStart) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.m[p]
	if ok {
		delete(c.m, p)
	}
	return n, ok
}

// put remembers that n keys are left from p on.
func (c *pageCounts) put(p pageStart, n int) {
	if len(p.key)+len(p.end) > maxPageKeyBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxPageCounts {
		c.m = make(map[pageStart]int)
	}
	c.m[p] = n
}

// clear forgets every count (the store's history was replaced).
func (c *pageCounts) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}
