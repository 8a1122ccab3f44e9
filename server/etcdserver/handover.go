package etcdserver

import (
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
// The lock makes the order exact: a message stepped under the read lock has been taken by raft's
// loop (node.Step returns only then, and raft steps it before it takes anything else) before a
// transfer's begin returns and the transfer message is sent.
type handoverGate struct {
	mu sync.RWMutex
	// transfers in flight; until is when the last one to end can no longer be pending in raft.
	transfers int
	until     time.Time
}

// begin marks a transfer in flight; every forwarded proposal after it takes the retrying path.
func (g *handoverGate) begin() {
	g.mu.Lock()
	g.transfers++
	g.mu.Unlock()
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
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.steadyLocked(now)
}

func (g *handoverGate) steadyLocked(now time.Time) bool {
	return g.transfers == 0 && !now.Before(g.until)
}

// stepIfSteady runs step, under the read lock, when no transfer can be in flight at now, and
// reports whether it did.
func (g *handoverGate) stepIfSteady(now time.Time, step func()) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.steadyLocked(now) {
		return false
	}
	step()
	return true
}
