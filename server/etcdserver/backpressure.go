package etcdserver

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/features"
)

// How far the applied index may trail the committed index before new proposals are refused with
// ErrTooManyRequests, as upstream: a member that cannot keep up applying sheds load instead of
// queueing without bound. With the PriorityRequest gate (3.7) a lease revocation, which frees
// keys and so relieves the pressure, is still taken up to twice as far behind.
const (
	maxApplyGap         = 5000
	maxPriorityApplyGap = 2 * maxApplyGap
)

// exceedsRequestLimit says whether a proposal of r must be refused at these indexes.
func exceedsRequestLimit(applied, committed uint64, r *pb.InternalRaftRequest, priority bool) bool {
	if committed <= applied+maxApplyGap {
		return false
	}
	return !(priority && r.LeaseRevoke != nil && committed <= applied+maxPriorityApplyGap)
}

// applyTimeout is how long a leader renewing a lease waits for its applied index.
const applyTimeout = time.Second

// waitForLease is what a leader does before it renews lease id, as upstream: it waits until it
// has applied everything committed, so a lease granted in an entry it has not applied yet is
// found. With the FastLeaseKeepAlive gate (3.7, on by default) it waits only when it does not
// know the lease, so renewals do not queue behind a busy apply loop.
func (s *Server) waitForLease(ctx context.Context, id int64) error {
	if s.cfg.Features.Enabled(features.FastLeaseKeepAlive) && s.les.Exists(id) {
		return nil
	}
	t := time.NewTimer(applyTimeout)
	defer t.Stop()
	select {
	case <-s.applyW.wait(s.committedIndex.Load()):
		return nil
	case <-t.C:
		return ErrTimeoutWaitAppliedIndex
	case <-s.stopping:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}
