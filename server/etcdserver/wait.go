package etcdserver

import (
	"sort"
	"sync"
)

// waitRegistry hands a proposal's result from the applier to the goroutine that proposed it.
type waitRegistry struct {
	mu sync.Mutex
	m  map[uint64]chan any
}

func newWaitRegistry() *waitRegistry { return &waitRegistry{m: map[uint64]chan any{}} }

func (w *waitRegistry) register(id uint64) <-chan any {
	ch := make(chan any, 1)
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return ch
}

func (w *waitRegistry) trigger(id uint64, x any) {
	w.mu.Lock()
	ch, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
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
