package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.opentelemetry.io/otel/trace"

	"etcdx/server/features"
	"etcdx/server/membership"
	"etcdx/server/version"
)

// proposeRetrying hands data to raft. Raft drops a proposal, without appending it anywhere, while
// this member knows no leader or leads and is handing leadership over; such a proposal is tried
// again once the leader changes (or after a short pause if a transfer was abandoned), so a
// leadership handover does not fail client requests.
func (s *Server) proposeRetrying(ctx context.Context, data []byte) error {
	for {
		wake := s.leaders.Next()
		var err error
		if lead := s.lead.Load(); lead != raft.None && lead != s.id && s.mem.IsRemoved(lead) {
			// The leader raft still follows was removed from the cluster: it drops what is
			// forwarded to it, without an answer. Wait for the next leader instead.
			err = raft.ErrProposalDropped
		} else {
			err = s.node.Propose(ctx, data)
		}
		if !errors.Is(err, raft.ErrProposalDropped) {
			return err
		}
		select {
		case <-wake:
		case <-time.After(s.cfg.heartbeat()):
		case <-ctx.Done():
			return err
		case <-s.stopping:
			return ErrStopped
		}
	}
}

// processRemoteProposal hands raft entries a follower forwarded to us. While this member leads
// and no leadership transfer can be in flight, they join the next batch (proposalBatcher).
// Otherwise stepping them would lose them silently should raft be handing leadership over (raft
// gives no answer for a stepped message): proposeForwarded proposes each instead.
func (s *Server) processRemoteProposal(m raftpb.Message) {
	if s.lead.Load() == s.id && s.handover.steady(time.Now()) {
		for _, e := range m.Entries {
			s.batcher.add(e.Data, proposalOrigin{from: m.From})
		}
		return
	}
	s.proposeForwarded(m)
}

// proposeForwarded proposes each entry of a forwarded message on its own, which gets raft's
// answer, so it can be retried, and once this member is a follower again raft forwards it on to
// the new leader.
func (s *Server) proposeForwarded(m raftpb.Message) {
	// Once the member has begun to stop, forwarded proposals are dropped (the follower's client
	// retries); counting one in after the stop began waiting would race with that wait.
	s.remoteMu.Lock()
	if s.remoteClosed {
		s.remoteMu.Unlock()
		return
	}
	s.remoteProposals.Add(1)
	s.remoteMu.Unlock()
	go func() {
		defer s.remoteProposals.Done()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
		defer cancel()
		for _, e := range m.Entries {
			if err := s.proposeRetrying(ctx, e.Data); err != nil {
				s.log.Warn("dropped a proposal forwarded by a peer", "from", fmt.Sprintf("%x", m.From), "error", err)
				return
			}
		}
	}()
}

// waitRemoteProposals gives forwarded proposals still looking for a leader a bounded time to find
// one before the member stops.
func (s *Server) waitRemoteProposals(limit time.Duration) {
	s.remoteMu.Lock()
	s.remoteClosed = true
	s.remoteMu.Unlock()
	done := make(chan struct{})
	go func() { s.remoteProposals.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
	}
}

// waitLeader returns once a leader is known, or ErrNoLeader after an election timeout without one:
// a proposal without a leader would only wait out the request timeout.
func (s *Server) waitLeader(ctx context.Context) error {
	deadline := time.NewTimer(s.cfg.electionTimeout())
	defer deadline.Stop()
	for {
		wake := s.leaders.Next()
		if s.lead.Load() != raft.None {
			return nil
		}
		select {
		case <-wake:
		case <-deadline.C:
			return ErrNoLeader
		case <-ctx.Done():
			return ctx.Err()
		case <-s.stopping:
			return ErrStopped
		}
	}
}

// proposeApplied proposes r and returns the proposal's or the applier's error, for requests whose
// answer is only whether they took effect.
func (s *Server) proposeApplied(ctx context.Context, r *pb.InternalRaftRequest) error {
	res, err := s.propose(ctx, r)
	if err != nil {
		return err
	}
	return res.err
}

// tracerName names this package's spans (under the gRPC server span of the request).
const tracerName = "etcdx/server/etcdserver"

// propose sends r through raft and waits for the applier's result.
func (s *Server) propose(ctx context.Context, r *pb.InternalRaftRequest) (_ *applyResult, err error) {
	if exceedsRequestLimit(s.appliedIndex.Load(), s.committedIndex.Load(), r, s.cfg.Features.Enabled(features.PriorityRequest)) {
		return nil, ErrTooManyRequests
	}
	id := s.reqIDs.next()
	r.Header = &pb.RequestHeader{ID: id}
	// Every member checks the caller's permissions again when it applies the entry; Authenticate
	// names its user in the request itself.
	if r.Authenticate == nil {
		in, err := s.Caller(ctx)
		if err != nil {
			return nil, err
		}
		if in != nil {
			r.Header.Username, r.Header.AuthRevision = in.Username, in.Revision
		}
	}
	defer func(start time.Time) { s.m.observeRequest(requestType(r), start, err) }(time.Now())
	data, err := s.encodeProposal(r)
	if err != nil {
		return nil, err
	}
	if len(data) > int(s.cfg.MaxRequestBytes) {
		return nil, ErrRequestTooLarge
	}
	return s.proposeAndWait(ctx, id, data)
}

// proposeAndWait proposes data, an entry whose request carries id, once a leader is known, and
// waits for the applier's result for id.
func (s *Server) proposeAndWait(ctx context.Context, id uint64, data []byte) (*applyResult, error) {
	if err := s.waitLeader(ctx); err != nil {
		return nil, err
	}
	ch := s.waits.register(id)
	cctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout())
	defer cancel()
	s.m.proposalsPending.Inc()
	defer s.m.proposalsPending.Dec()
	// Spans only when the request is traced (tracing on and sampled): building them costs a few
	// allocations per write otherwise.
	span := trace.SpanFromContext(ctx)
	traced := span.IsRecording()
	var tracer trace.Tracer
	pctx := ctx
	if traced {
		tracer = span.TracerProvider().Tracer(tracerName)
		pctx, span = tracer.Start(ctx, "raft proposal")
		defer span.End()
	}
	if s.lead.Load() == s.id && s.handover.steady(time.Now()) {
		// A leader's proposals go in batches (proposalBatcher); one that cannot be stepped is
		// proposed on its own, and its failure comes back through the wait.
		s.batcher.add(data, proposalOrigin{ctx: cctx, id: id})
	} else if err := s.proposeRetrying(cctx, data); err != nil {
		s.waits.trigger(id, nil)
		s.m.proposalsFailed.Inc()
		span.RecordError(err)
		return nil, s.proposeErr(ctx, err)
	}
	proposed := time.Now()
	select {
	case x := <-ch:
		if x == nil {
			return nil, ErrStopped
		}
		if f, ok := x.(proposalFailure); ok {
			s.m.proposalsFailed.Inc()
			span.RecordError(f.err)
			return nil, s.proposeErr(ctx, f.err)
		}
		res := x.(*applyResult)
		if traced {
			// The commit and apply happened elsewhere; their spans take the times recorded there.
			_, commit := tracer.Start(pctx, "raft commit", trace.WithTimestamp(proposed))
			commit.End(trace.WithTimestamp(res.applied))
			_, apply := tracer.Start(pctx, "apply", trace.WithTimestamp(res.applied))
			apply.End(trace.WithTimestamp(res.appliedAt))
		}
		return res, nil
	case <-cctx.Done():
		s.waits.trigger(id, nil)
		s.m.proposalsFailed.Inc()
		return nil, s.proposeErr(ctx, cctx.Err())
	case <-s.stopping:
		return nil, ErrStopped
	}
}

// encodeProposal is the entry data for r: at 3.5 a member's attributes and the cluster version go
// as the bare v2 requests upstream 3.5 proposes (the only form 3.4 members apply), else the v3
// request.
func (s *Server) encodeProposal(r *pb.InternalRaftRequest) ([]byte, error) {
	if !version.V3Publish.Built(s.cfg.Level) {
		v2, ok, err := membership.ToV2(r)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		if ok {
			return v2.Marshal()
		}
	}
	data, err := r.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return data, nil
}

func (s *Server) proposeErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	select {
	case <-s.stopping:
		return ErrStopped
	default:
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTimeout
	}
	return err
}
