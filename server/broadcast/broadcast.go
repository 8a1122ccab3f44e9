// Package broadcast wakes every goroutine waiting for a change at once: a channel closed at each
// change, and a fresh one for the waiters after it. Waiting on it, rather than polling the state
// it guards, also lets a testing/synctest bubble's clock move (a receive blocks durably).
package broadcast

import "sync"

// Changes is the broadcast of one kind of change; its zero value is ready to use.
type Changes struct {
	mu sync.Mutex
	c  chan struct{} // nil until someone waits after the last change
}

// Next is closed at the next Notify. Take it before looking at the state the changes are of, so
// a change between the look and the wait is not missed.
func (b *Changes) Next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.c == nil {
		b.c = make(chan struct{})
	}
	return b.c
}

// Notify wakes everyone waiting on Next.
func (b *Changes) Notify() {
	b.mu.Lock()
	if b.c != nil {
		close(b.c)
		b.c = nil
	}
	b.mu.Unlock()
}
