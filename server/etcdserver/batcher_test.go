package etcdserver

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// batchRig runs a batcher whose steps arrive on steps; raft takes every batch unless refuse is
// set.
type batchRig struct {
	b         *proposalBatcher
	committed atomic.Uint64
	refuse    atomic.Bool
	steps     chan []string
}

func newBatchRig(t *testing.T, maxHold time.Duration) *batchRig {
	t.Helper()
	r := &batchRig{steps: make(chan []string, 16)}
	r.b = newProposalBatcher(&r.committed, maxHold, 0, 0)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		r.b.run(stop, func(es []raftpb.Entry, os []proposalOrigin) bool {
			if len(es) != len(os) {
				t.Errorf("%d entries but %d origins", len(es), len(os))
			}
			var ds []string
			for _, e := range es {
				ds = append(ds, string(e.Data))
			}
			taken := !r.refuse.Load()
			r.steps <- ds
			return taken
		})
	}()
	t.Cleanup(func() { close(stop); <-done })
	return r
}

func (r *batchRig) add(ds ...string) {
	for _, d := range ds {
		r.b.add([]byte(d), proposalOrigin{id: 1})
	}
}

// next is the next batch stepped, failing after a generous bound.
func (r *batchRig) next(t *testing.T) []string {
	t.Helper()
	select {
	case ds := <-r.steps:
		return ds
	case <-time.After(10 * time.Second):
		t.Fatal("no batch stepped")
		return nil
	}
}

// none checks that no batch is stepped while the batcher has had its chance to.
func (r *batchRig) none(t *testing.T, why string) {
	t.Helper()
	select {
	case ds := <-r.steps:
		t.Fatalf("stepped %q %s", ds, why)
	case <-time.After(20 * time.Millisecond):
	}
}

// same reports whether a batch holds exactly want, in order.
func same(got []string, want ...string) bool { return slices.Equal(got, want) }

func TestBatcherStepsAtOnceWhileTheLoopIsIdle(t *testing.T) {
	r := newBatchRig(t, time.Hour)
	r.add("a")
	if got := r.next(t); !same(got, "a") {
		t.Fatalf("stepped %q, want [a]", got)
	}
	// A single member's round is one Ready: nothing is held for it.
	r.b.appended(7, false)
	r.add("b")
	if got := r.next(t); !same(got, "b") {
		t.Fatalf("stepped %q, want [b]", got)
	}
}

func TestBatcherGathersWhileTheLoopIsBusy(t *testing.T) {
	r := newBatchRig(t, time.Hour)
	r.b.loopBusy()
	r.add("a", "b", "c")
	r.none(t, "while the loop was busy")
	r.b.loopFree()
	if got := r.next(t); !same(got, "a", "b", "c") {
		t.Fatalf("stepped %q, want [a b c] in one batch", got)
	}
	r.b.appended(3, false)
	// The loop advanced and took its next Ready before the batcher looked: what gathered is
	// stepped all the same.
	r.b.loopBusy()
	r.add("d")
	r.b.loopFree()
	r.b.loopBusy()
	if got := r.next(t); !same(got, "d") {
		t.Fatalf("stepped %q, want [d]", got)
	}
}

// With followers, one batch is in flight at a time: the next waits for the last to commit.
func TestBatcherHoldsTheNextBatchUntilTheRoundCommits(t *testing.T) {
	r := newBatchRig(t, time.Hour)
	r.committed.Store(10)
	r.add("a")
	if got := r.next(t); !same(got, "a") {
		t.Fatalf("stepped %q, want [a]", got)
	}
	r.add("b") // stepped, not yet appended: held
	r.none(t, "before the last batch was appended")
	r.b.appended(11, true)
	r.b.loopFree()
	r.add("c")
	r.none(t, "before the last batch committed")
	r.committed.Store(11)
	r.b.loopFree()
	if got := r.next(t); !same(got, "b", "c") {
		t.Fatalf("stepped %q, want [b c]", got)
	}
}

func TestBatcherStepsAHeldBatchAfterMaxHold(t *testing.T) {
	r := newBatchRig(t, 50*time.Millisecond)
	r.add("a")
	r.next(t)
	r.b.appended(1, true) // never commits
	start := time.Now()
	r.add("b")
	if got := r.next(t); !same(got, "b") {
		t.Fatalf("stepped %q, want [b]", got)
	}
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("a held batch went after %v, before maxHold", waited)
	}
}

// A batch raft did not take (its entries proposed one by one instead) leaves nothing in flight.
func TestBatcherRefusedBatchHoldsNothing(t *testing.T) {
	r := newBatchRig(t, time.Hour)
	r.refuse.Store(true)
	r.add("a")
	r.next(t)
	r.refuse.Store(false)
	r.add("b")
	if got := r.next(t); !same(got, "b") {
		t.Fatalf("stepped %q, want [b]", got)
	}
}

// The pacing rule, on take's clock: after a step of lastSize entries whose round (up to index
// 10) has committed, with queued entries waiting, since after the step.
func TestBatcherPacesRoundsUnderLoad(t *testing.T) {
	const pace, maxPace, maxHold = 2 * time.Millisecond, 4 * time.Millisecond, time.Hour
	for _, tc := range []struct {
		name       string
		replicated bool
		lastSize   int
		queued     int
		since      time.Duration
		wantHold   time.Duration // 0: the batch goes now
	}{
		{"a lone client's next request goes at once", true, 1, 1, 100 * time.Microsecond, 0},
		{"under load a small batch waits out the pace", true, 5, 3, 500 * time.Microsecond, 1500 * time.Microsecond},
		{"after a round filling up, the long pace", true, longPaceAfter, 3, 500 * time.Microsecond, 3500 * time.Microsecond},
		{"a full batch goes at once", true, longPaceAfter, fullBatch, 500 * time.Microsecond, 0},
		{"once the pace has passed it goes", true, 5, 3, pace, 0},
		{"once the long pace has passed it goes", true, longPaceAfter, 3, maxPace, 0},
		{"no followers: a round is one Ready, nothing to pace", false, 5, 3, 500 * time.Microsecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var committed atomic.Uint64
			committed.Store(10)
			b := newProposalBatcher(&committed, maxHold, pace, maxPace)
			step := time.Unix(1000, 0)
			for range tc.lastSize {
				b.add([]byte("x"), proposalOrigin{id: 1})
			}
			if es, _, hold := b.take(step); len(es) != tc.lastSize || hold != 0 {
				t.Fatalf("first take: %d entries, hold %v", len(es), hold)
			}
			b.appended(10, tc.replicated)
			for range tc.queued {
				b.add([]byte("y"), proposalOrigin{id: 2})
			}
			es, _, hold := b.take(step.Add(tc.since))
			if hold != tc.wantHold {
				t.Fatalf("hold %v, want %v", hold, tc.wantHold)
			}
			want := tc.queued
			if tc.wantHold > 0 {
				want = 0 // held: the queue stays
			}
			if len(es) != want {
				t.Fatalf("took %d entries, want %d", len(es), want)
			}
		})
	}
}

func TestBatchPace(t *testing.T) {
	const pace, maxPace = 2 * time.Millisecond, 4 * time.Millisecond
	for _, tc := range []struct {
		pace, maxPace time.Duration
		lastSize      int
		want          time.Duration
	}{
		{pace, maxPace, 1, pace},                 // a lone client's round (paceWait lets it go)
		{pace, maxPace, longPaceAfter - 1, pace}, // a light load's rounds: the short pace
		{pace, maxPace, longPaceAfter, maxPace},  // rounds filling up: the long one
		{pace, maxPace, 1000, maxPace},           // never longer
		{0, maxPace, 1000, 0},                    // pacing off
		{pace, 0, 1000, pace},                    // no long pace: the short one
		{pace, pace / 2, longPaceAfter, pace},    // a long pace below the short: the short
	} {
		if got := batchPace(tc.pace, tc.maxPace, tc.lastSize); got != tc.want {
			t.Errorf("batchPace(%v, %v, %d) = %v, want %v", tc.pace, tc.maxPace, tc.lastSize, got, tc.want)
		}
	}
}

func TestPaceWait(t *testing.T) {
	const pace = 2 * time.Millisecond
	for _, tc := range []struct {
		lastSize int
		since    time.Duration
		want     time.Duration
	}{
		{0, 0, 0},                      // nothing before: go
		{1, 100 * time.Microsecond, 0}, // a lone client's round: go
		{2, 100 * time.Microsecond, 1900 * time.Microsecond},
		{50, 1500 * time.Microsecond, 500 * time.Microsecond},
		{50, pace, 0},      // the pace has passed
		{50, time.Hour, 0}, // idle since
	} {
		if got := paceWait(pace, tc.lastSize, tc.since); got != tc.want {
			t.Errorf("paceWait(%v, %d, %v) = %v, want %v", pace, tc.lastSize, tc.since, got, tc.want)
		}
	}
}
