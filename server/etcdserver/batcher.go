package etcdserver

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// proposalBatcher gathers what this leader proposes (its own clients' requests and the entries
// its followers forward) and steps it into raft as one proposal. Raft sends an append to every
// follower for each proposal it steps, and each follower writes and answers each: k proposals
// stepped one by one cost k appends, k answers and up to k WAL fsyncs on every member; batched,
// they cost one of each.
//
// When a batch is stepped:
//   - while the raft loop is busy with a Ready, entries gather until it has advanced (an entry
//     stepped meanwhile would only reach the WAL with the next Ready anyway);
//   - on a leader with followers, one batch is in flight at a time: the next is stepped once the
//     last is committed (group commit at the pace of a replication round). A lone request, at
//     an idle member or from a client that waits for each answer, finds nothing in flight and
//     is stepped at once; under load a request waits at most for the round under way, and the
//     rounds carry everything that arrived meanwhile. Should a round not commit (a lost quorum),
//     the batch is stepped after maxHold anyway.
//   - under a load of many independent requests, rounds are paced: when the last batch carried
//     several entries (demand, not one client waiting for each answer) and fewer than
//     fullBatch are queued, the next waits until pace after the last step, or maxPace after it
//     when the last carried longPaceAfter or more (batchPace). Every round costs each member a
//     Ready, a WAL fsync, an append and its answer whatever it carries, so fewer, fuller rounds
//     cost less CPU per request; the price is at most that wait less a round's own for a
//     request, and none for a lone client or a batch already full. The longer wait is for a
//     load that fills rounds (thousands of requests a second), whose requests queue for the
//     CPU the rounds take: there a round saved is CPU every request gets back; a light load's
//     rounds of two or three keep the short wait, its latency near a round's own.
//
// Only a leader batches, and only while no leadership transfer can be in flight (handoverGate):
// raft then never drops a proposal, so nothing needs raft's answer. A batch that finds this member
// no longer leading, or a transfer begun, has each entry proposed on its own by the retrying path.
type proposalBatcher struct {
	// committed is the member's commit index (the raft loop keeps it).
	committed *atomic.Uint64
	// maxHold bounds how long a batch waits for the round in flight; pace and maxPace are the
	// shortest and longest time between steps under load (pace 0: no pacing).
	maxHold time.Duration
	pace    time.Duration
	maxPace time.Duration

	// busy is true from when the raft loop takes a Ready until it has advanced past it; frees
	// counts the times it advanced.
	busy  atomic.Bool
	frees atomic.Uint64
	// wake carries every event the batcher may act on: an entry queued, the loop advanced.
	wake chan struct{}

	mu      sync.Mutex
	entries []raftpb.Entry
	origins []proposalOrigin
	// inFlight is true from a step until its round commits: stepped (not yet seen appended, so
	// its last index unknown), or appended up to inFlightTo, which followers replicate.
	stepped    bool
	replicated bool
	inFlightTo uint64
	lastStep   time.Time
	lastSize   int
}

// fullBatch is a batch that pacing would not make cheaper per entry: the round's own cost is
// then a small share of it.
const fullBatch = 16

// roundPace is a loaded leader's shortest time between rounds (batches of proposals, ReadIndex
// rounds): long enough to fill a round at a few thousand requests a second, short beside a
// replication round's own latency. A batch of proposals waits maxRoundPace after one of
// longPaceAfter entries or more: at 3,300 puts/s on three members that made rounds 40% fewer
// (13.7 requests per WAL fsync against 8.1) and CPU per request 14% less, at 1 ms more median
// latency and the same p99 (docs/performance.md).
const (
	roundPace     = 2 * time.Millisecond
	maxRoundPace  = 4 * time.Millisecond
	longPaceAfter = 8
)

// proposalOrigin says who is waiting on a batched entry, for when it must be proposed alone.
type proposalOrigin struct {
	// ctx and id are a local request's (its deadline, its wait); from is the follower that
	// forwarded the entry (0 for local requests).
	ctx  context.Context
	id   uint64
	from uint64
}

// proposalFailure tells a local request that its entry could not be proposed: its wait carries it
// in place of an apply result.
type proposalFailure struct{ err error }

func newProposalBatcher(committed *atomic.Uint64, maxHold, pace, maxPace time.Duration) *proposalBatcher {
	return &proposalBatcher{committed: committed, maxHold: maxHold, pace: pace, maxPace: maxPace, wake: make(chan struct{}, 1)}
}

// add queues an entry for the next batch.
func (b *proposalBatcher) add(data []byte, o proposalOrigin) {
	b.mu.Lock()
	b.entries = append(b.entries, raftpb.Entry{Data: data})
	b.origins = append(b.origins, o)
	b.mu.Unlock()
	b.poke()
}

func (b *proposalBatcher) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// loopBusy and loopFree are called by the raft loop around each Ready.
func (b *proposalBatcher) loopBusy() { b.busy.Store(true) }

func (b *proposalBatcher) loopFree() {
	b.busy.Store(false)
	b.frees.Add(1)
	b.poke()
}

// appended tells the batcher, from the raft loop, that this leader appended entries up to last;
// replicated when it sent them to followers (with none, a round is one Ready: nothing to pace).
func (b *proposalBatcher) appended(last uint64, replicated bool) {
	b.mu.Lock()
	b.stepped, b.replicated, b.inFlightTo = false, replicated, last
	b.mu.Unlock()
}

// refused records that raft did not take the last batch: nothing of it is in flight.
func (b *proposalBatcher) refused() {
	b.mu.Lock()
	b.stepped = false
	b.mu.Unlock()
}

// reset forgets the round in flight (leadership changed: its entries may never commit).
func (b *proposalBatcher) reset() { b.appended(0, false) }

// take hands over what is queued if a batch may be stepped at now; the batch's slices are then
// raft's (it numbers the entries in place), so the queue starts new ones. hold is how long until
// the batch may go regardless, when it is held.
func (b *proposalBatcher) take(now time.Time) (es []raftpb.Entry, os []proposalOrigin, hold time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.entries) == 0 {
		return nil, nil, 0
	}
	waited := now.Sub(b.lastStep)
	inFlight := b.stepped || (b.replicated && b.committed.Load() < b.inFlightTo)
	if inFlight && waited < b.maxHold {
		return nil, nil, b.maxHold - waited
	}
	if wait := paceWait(batchPace(b.pace, b.maxPace, b.lastSize), b.lastSize, waited); wait > 0 && b.replicated && len(b.entries) < fullBatch {
		return nil, nil, wait
	}
	es, os = b.entries, b.origins
	b.entries, b.origins = nil, nil
	b.stepped, b.lastStep, b.lastSize = true, now, len(es)
	return es, os, 0
}

// paceWait is how long the next round (a batch of proposals, a ReadIndex round) waits when the
// last one, since ago, carried lastSize requests: under a load of independent requests (the
// last carried several) until pace after the last; for a lone client (it waits for each answer,
// so its rounds carry one) not at all.
func paceWait(pace time.Duration, lastSize int, since time.Duration) time.Duration {
	if lastSize < 2 || since >= pace {
		return 0
	}
	return pace - since
}

// batchPace is how long after a batch of lastSize entries the next is stepped under load: pace,
// or maxPace after a batch of longPaceAfter or more.
func batchPace(pace, maxPace time.Duration, lastSize int) time.Duration {
	if pace == 0 {
		return 0
	}
	if lastSize >= longPaceAfter {
		return max(pace, maxPace)
	}
	return pace
}

// batchProposals steps batches into raft until the member stops.
func (s *Server) batchProposals() {
	s.batcher.run(s.stopping, func(es []raftpb.Entry, os []proposalOrigin) bool {
		if s.stepBatch(es) {
			return true
		}
		s.proposeEach(es, os)
		return false
	})
}

// run hands each batch to step when take allows it, looking again at every event and when a
// held batch's maxHold runs out. step reports whether raft took the batch (false: its entries
// went their own way, and nothing is in flight).
func (b *proposalBatcher) run(stop <-chan struct{}, step func([]raftpb.Entry, []proposalOrigin) bool) {
	held := time.NewTimer(time.Hour)
	held.Stop()
	var frees uint64
	for {
		select {
		case <-b.wake:
			// While the loop is busy, gather until it has advanced (it wakes us then). Once it
			// has, go even if it already took its next Ready: waiting for a moment it is idle
			// could wait long, and the batch joins the Ready after.
			f := b.frees.Load()
			if b.busy.Load() && f == frees {
				continue
			}
			frees = f
		case <-held.C:
		case <-stop:
			return
		}
		es, os, hold := b.take(time.Now())
		if hold > 0 {
			held.Reset(hold)
			continue
		}
		if len(es) > 0 && !step(es, os) {
			b.refused()
		}
	}
}

// stepBatch steps es into raft as one proposal if this member leads with no transfer in flight;
// false if it did not step them (raft has none of them then).
func (s *Server) stepBatch(es []raftpb.Entry) bool {
	if s.lead.Load() != s.id {
		return false
	}
	var err error
	stepped := s.handover.stepIfSteady(time.Now(), func(steps context.Context) {
		// Raft takes proposals only while it knows a leader: bounded, in case it just lost it.
		// A transfer's begin cancels steps; raft has not taken one that ends so.
		ctx, cancel := context.WithTimeout(steps, s.cfg.electionTimeout())
		defer cancel()
		err = s.node.Step(ctx, raftpb.Message{Type: raftpb.MsgProp, From: s.id, Entries: es})
	})
	return stepped && err == nil
}

// proposeEach proposes the entries of a batch that could not be stepped, each on its own through
// the retrying path, as they would have been without batching.
func (s *Server) proposeEach(es []raftpb.Entry, os []proposalOrigin) {
	for i, e := range es {
		o := os[i]
		if o.from != 0 {
			s.proposeForwarded(raftpb.Message{Type: raftpb.MsgProp, From: o.from, Entries: []raftpb.Entry{{Data: e.Data}}})
			continue
		}
		go func() {
			if err := s.proposeRetrying(o.ctx, e.Data); err != nil {
				s.waits.trigger(o.id, proposalFailure{err})
			}
		}()
	}
}
