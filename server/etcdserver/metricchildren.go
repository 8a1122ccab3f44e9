package etcdserver

import (
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// children keeps the children of a metric vector by the key their label values follow from.
// The registry hashes and checks the label values on every lookup; for the three histograms and
// the counter every request records that was a few percent of a one-key read's CPU time. A
// child is made on its first use, as before, so /metrics shows the same series.
type children[K comparable, M any] struct {
	make func(K) M
	mu   sync.Mutex // serializes additions; lookups only load m
	m    atomic.Pointer[map[K]M]
}

// maxChildren bounds what is kept: a label a client chooses (its API version) could otherwise
// grow the map, and each addition copies it. Beyond it children are looked up as before.
const maxChildren = 64

func newChildren[K comparable, M any](make func(K) M) *children[K, M] {
	c := &children[K, M]{make: make}
	c.m.Store(&map[K]M{})
	return c
}

// with returns the child for k. The map is replaced, never changed, so lookups take no lock.
func (c *children[K, M]) with(k K) M {
	if m, found := (*c.m.Load())[k]; found {
		return m
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.m.Load()
	if m, found := old[k]; found {
		return m
	}
	m := c.make(k)
	if len(old) < maxChildren {
		next := maps.Clone(old)
		next[k] = m
		c.m.Store(&next)
	}
	return m
}

// outcome is a request kind (or operation) and whether it succeeded.
type outcome struct {
	kind string
	ok   bool
}

// observers are a histogram's children by outcome; labels gives the label values of one.
func observers(vec *prometheus.HistogramVec, labels func(kind, success string) []string) *children[outcome, prometheus.Observer] {
	return newChildren(func(o outcome) prometheus.Observer {
		return vec.WithLabelValues(labels(o.kind, strconv.FormatBool(o.ok))...)
	})
}
