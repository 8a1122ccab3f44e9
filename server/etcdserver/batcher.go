package etcdserver

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// proposalBatcher gathers what this leader proposes (its own clients' requests and the entries
// its followers forward) while the raft loop is busy with a Ready, and steps it into raft as one
// proposal when the loop is free. Raft sends an append to every follower for each proposal it
// steps, and each follower answers each: k proposals in one Ready cost k appends and k answers
// per follower, and as many trips through raft's loop on both sides. Batched, they cost one.
//
// Nothing waits longer than it would have: an entry stepped while the loop is busy only reaches
// the WAL and the followers with the next Ready, which the loop takes after it is free again, and
// at an idle loop an entry is stepped at once.
//
// Only a leader batches, and only while no leadership transfer can be in flight (handoverGate):
// raft then never drops a proposal, so nothing needs raft's answer. A batch that finds this member
// no longer leading, or a transfer begun, has each entry proposed on its own by the retrying path.
type proposalBatcher struct {
	// busy is true from when the raft loop takes a Ready until it has advanced past it; added
	// wakes the batcher when an entry is queued, freed when the loop has advanced.
	busy  atomic.Bool
	added chan struct{}
	freed chan struct{}

	mu      sync.Mutex
	entries []raftpb.Entry
	origins []proposalOrigin
}

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

func newProposalBatcher() *proposalBatcher {
	return &proposalBatcher{added: make(chan struct{}, 1), freed: make(chan struct{}, 1)}
}

// add queues an entry for the next batch.
func (b *proposalBatcher) add(data []byte, o proposalOrigin) {
	b.mu.Lock()
	b.entries = append(b.entries, raftpb.Entry{Data: data})
	b.origins = append(b.origins, o)
	b.mu.Unlock()
	poke(b.added)
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// take hands over what is queued; the batch's slices are then raft's (it numbers the entries in
// place), so the queue starts new ones.
func (b *proposalBatcher) take() ([]raftpb.Entry, []proposalOrigin) {
	b.mu.Lock()
	defer b.mu.Unlock()
	es, os := b.entries, b.origins
	b.entries, b.origins = nil, nil
	return es, os
}

// loopBusy and loopFree are called by the raft loop around each Ready.
func (b *proposalBatcher) loopBusy() { b.busy.Store(true) }

func (b *proposalBatcher) loopFree() {
	b.busy.Store(false)
	poke(b.freed)
}

// batchProposals steps batches into raft until the member stops.
func (s *Server) batchProposals() {
	s.batcher.run(s.stopping, func(es []raftpb.Entry, os []proposalOrigin) {
		if !s.stepBatch(es) {
			s.proposeEach(es, os)
		}
	})
}

// run hands each batch to step: at once while the raft loop is idle, else once it has advanced.
func (b *proposalBatcher) run(stop <-chan struct{}, step func([]raftpb.Entry, []proposalOrigin)) {
	for {
		select {
		case <-b.added:
			if b.busy.Load() {
				continue // gather until the loop has advanced
			}
		case <-b.freed:
			// Step what gathered even if the loop has already taken its next Ready: it goes
			// into the one after, and waiting for a moment the loop is idle could wait long.
		case <-stop:
			return
		}
		if es, os := b.take(); len(es) > 0 {
			step(es, os)
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
	stepped := s.handover.stepIfSteady(time.Now(), func() {
		// Raft takes proposals only while it knows a leader: bounded, in case it just lost it.
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.electionTimeout())
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
