package etcdserver

import (
	"context"
	"sync"
	"time"
)

// handoverGate orders proposals forwarded by followers against this leader's leadership
// transfers. While no transfer can be in flight, a forwarded message is stepped into raft as it
// came (all its entries in one append, as upstream does), without a goroutine or a wait for
// raft's answer: raft drops proposals only while it hands leadership over. From the moment a
// transfer begins until raft has certainly given it up (an election timeout after our wait for
// it ends), forwarded proposals take the retrying path, which learns of a drop and proposes again
// to the next leader.
//
// The order is exact: a transfer's begin cancels the steps under way (raft has not taken a step
// that ends cancelled, so its caller proposes it again by the retrying path) and waits for them
// to end, so a message raft took is processed before the transfer message is sent. begin waits on
// a channel, never on a lock held across a step: a step can wait up to an election timeout for
// raft to know a leader, and a lock held that long would keep a simulated clock from moving.
type handoverGate struct {
	mu sync.Mutex
	// transfers in flight; until is when the last one to end can no longer be pending in raft.
	transfers int
	until     time.Time
	// stepping counts steps under way; drained is closed when the count falls to zero, for a
	// begin waiting on it (nil when none waits).
	stepping int
	drained  chan struct{}
	// steps is the context of the steps under way since the last begin; cancelSteps ends it.
	steps       context.Context
	cancelSteps context.CancelFunc
}

// begin marks a transfer in flight, cancels the steps under way and waits for them to end; every
// forwarded proposal after it takes the retrying path.
func (g *handoverGate) begin() {
	g.mu.Lock()
	g.transfers++
	if g.cancelSteps != nil {
		g.cancelSteps()
		g.steps, g.cancelSteps = nil, nil
	}
	if g.stepping == 0 {
		g.mu.Unlock()
		return
	}
	if g.drained == nil {
		g.drained = make(chan struct{})
	}
	drained := g.drained
	g.mu.Unlock()
	<-drained
}

// end marks the transfer over from our side; raft may hold it pending for up to abandonAfter
// more (raft abandons a transfer an election timeout after it began).
func (g *handoverGate) end(now time.Time, abandonAfter time.Duration) {
	g.mu.Lock()
	g.transfers--
	if u := now.Add(abandonAfter); u.After(g.until) {
		g.until = u
	}
	g.mu.Unlock()
}

// steady reports whether no transfer can be in flight at now.
func (g *handoverGate) steady(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.steadyLocked(now)
}

func (g *handoverGate) steadyLocked(now time.Time) bool {
	return g.transfers == 0 && !now.Before(g.until)
}

// stepIfSteady runs step when no transfer can be in flight at now, and reports whether it did.
// step's context is cancelled when a transfer begins; step must return soon after.
func (g *handoverGate) stepIfSteady(now time.Time, step func(ctx context.Context)) bool {
	g.mu.Lock()
	if !g.steadyLocked(now) {
		g.mu.Unlock()
		return false
	}
	if g.steps == nil {
		g.steps, g.cancelSteps = context.WithCancel(context.Background())
	}
	ctx := g.steps
	g.stepping++
	g.mu.Unlock()

	step(ctx)

	g.mu.Lock()
	g.stepping--
	if g.stepping == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
	g.mu.Unlock()
	return true
}
