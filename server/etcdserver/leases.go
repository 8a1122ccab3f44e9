package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/apply"
	"etcdx/server/features"
	"etcdx/server/lease"
)

// checkpointLeases records remaining TTLs through raft (0 clears a lease's checkpoint).
func (s *Server) checkpointLeases(rem map[int64]int64) {
	req := apply.Checkpoints(rem)
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
	defer cancel()
	if res, err := s.propose(ctx, &pb.InternalRaftRequest{LeaseCheckpoint: req}); err != nil || res.err != nil {
		s.log.Warn("failed to checkpoint lease TTLs", "leases", len(rem), "error", errors.Join(err, resErr(res)))
	}
}

func resErr(r *applyResult) error {
	if r == nil {
		return nil
	}
	return r.err
}

// checkpointing says whether the leader checkpoints remaining TTLs: upstream's LeaseCheckpoint
// gate (--experimental-enable-lease-checkpoint before 3.7), off by default, when a new leader
// starts every lease over from its whole TTL.
func (s *Server) checkpointing() bool { return s.cfg.Features.Enabled(features.LeaseCheckpoint) }

// leaseLoop has the leader revoke expired leases and, with the gate on, checkpoint remaining
// TTLs through raft.
func (s *Server) leaseLoop() {
	defer s.wg.Done()
	t := time.NewTicker(lease.ExpiryCheck)
	defer t.Stop()
	var checkpoints <-chan time.Time // nil: never
	if s.checkpointing() {
		cp := time.NewTicker(s.cfg.LeaseCheckpointInterval)
		defer cp.Stop()
		checkpoints = cp.C
	}
	for {
		select {
		case <-t.C:
		case <-checkpoints:
			if rem := s.les.Remaining(s.cfg.LeaseCheckpointInterval); len(rem) > 0 {
				go s.checkpointLeases(rem)
			}
			continue
		case <-s.stopping:
			return
		}
		for _, id := range s.les.Expired(1000) {
			go func(id int64) {
				ctx, cancel := context.WithTimeout(s.AsRoot(context.Background()), s.cfg.requestTimeout())
				defer cancel()
				if _, err := s.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: id}); err != nil && !errors.Is(err, lease.ErrNotFound) {
					s.log.Warn("failed to revoke expired lease", "lease-id", fmt.Sprintf("%016x", id), "error", err)
				} else if err == nil {
					s.m.leaseExpired.Inc()
				}
			}(id)
		}
	}
}
