package etcdserver

import (
	"sort"
	"sync"
)

// waitShards spreads the registry over several locks: every proposing request registers and the
// apply loop triggers each result, and with one lock it was the most contended lock of the put
// path in a mutex profile. Request IDs are consecutive, so their low bits spread them evenly.
const waitShards = 64

// waitRegistry hands a proposal's result from the applier to the goroutine that proposed it.
type waitRegistry struct {
	shards [waitShards]waitShard
}

type waitShard struct {
	mu sync.Mutex
	m  map[uint64]chan any
}

func newWaitRegistry() *waitRegistry {
	w := &waitRegistry{}
	for i := range w.shards {
		w.shards[i].m = map[uint64]chan any{}
	}
	return w
}

func (w *waitRegistry) register(id uint64) <-chan any {
	ch := make(chan any, 1)
	sh := &w.shards[id%waitShards]
	sh.mu.Lock()
	sh.m[id] = ch
	sh.mu.Unlock()
	return ch
}

// trigger gives x to id's waiter, if it is still registered.
func (w *waitRegistry) trigger(id uint64, x any) {
	sh := &w.shards[id%waitShards]
	sh.mu.Lock()
	ch, ok := sh.m[id]
	delete(sh.m, id)
	sh.mu.Unlock()
	if ok {
		ch <- x
	}
}

// indexWaiter releases waiters once the applied index reaches their index.
type indexWaiter struct {
	mu      sync.Mutex
	applied uint64
	waiters []indexWait
}

type indexWait struct {
	index uint64
	ch    chan struct{}
}

func (w *indexWaiter) wait(index uint64) <-chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if index <= w.applied {
		close(ch)
		return ch
	}
	w.waiters = append(w.waiters, indexWait{index, ch})
	return ch
}

func (w *indexWaiter) advance(applied uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.applied = applied
	sort.Slice(w.waiters, func(i, j int) bool { return w.waiters[i].index < w.waiters[j].index })
	n := 0
	for n < len(w.waiters) && w.waiters[n].index <= applied {
		close(w.waiters[n].ch)
		n++
	}
	w.waiters = w.waiters[n:]
}
