package etcdserver

import (
	"sync"
	"testing"
)

// TestWaitRegistry: each registered ID gets exactly its own result, whichever shard it falls in
// and in whatever order results come; a result for an ID no longer (or never) registered is
// dropped without blocking.
func TestWaitRegistry(t *testing.T) {
	w := newWaitRegistry()
	const n = 1000
	chans := make(map[uint64]<-chan any, n)
	for id := uint64(1); id <= n; id++ {
		chans[id] = w.register(id * 7) // IDs that are not consecutive still spread over shards
	}
	var wg sync.WaitGroup
	for id := uint64(n); id >= 1; id-- {
		wg.Add(1)
		go func(id uint64) {
			defer wg.Done()
			w.trigger(id*7, id)
		}(id)
	}
	wg.Wait()
	for id, ch := range chans {
		select {
		case got := <-ch:
			if got.(uint64) != id {
				t.Fatalf("waiter %d got %v", id*7, got)
			}
		default:
			t.Fatalf("waiter %d got nothing", id*7)
		}
	}
	w.trigger(7, "again")        // already triggered: dropped
	w.trigger(123456789, "none") // never registered: dropped
	for i := range w.shards {
		if n := len(w.shards[i].m); n != 0 {
			t.Fatalf("shard %d still holds %d waiters", i, n)
		}
	}
}
