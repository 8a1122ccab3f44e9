package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/apply"
	"etcdx/server/auth"
	"etcdx/server/failpoint"
	"etcdx/server/lease"
	"etcdx/server/mvcc"
)

// proposeAs proposes r and returns the applier's response as T, or its error.
func proposeAs[T any](ctx context.Context, s *Server, r *pb.InternalRaftRequest) (T, error) {
	var zero T
	res, err := s.propose(ctx, r)
	if err != nil {
		return zero, err
	}
	if res.err != nil {
		return zero, res.err
	}
	return res.resp.(T), nil
}

// Range reads; linearizable unless the request asks to be served locally.
func (s *Server) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	var resp *pb.RangeResponse
	err := s.serveRange(ctx, r, func(v *mvcc.TxnRead) (err error) {
		resp, err = apply.Range(v, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// serveRange runs read for r in a read view, after the linearizable read's wait and the
// permission check, and records the range's metrics.
func (s *Server) serveRange(ctx context.Context, r *pb.RangeRequest, read func(*mvcc.TxnRead) error) (err error) {
	start := time.Now()
	defer func() {
		s.m.rangeDuration.with(outcome{ok: err == nil}).Observe(time.Since(start).Seconds())
		s.m.observeRequest("Range", start, err)
	}()
	if !r.Serializable {
		if err := s.LinearizableReadNotify(ctx); err != nil {
			return err
		}
	}
	return s.checkedRead(ctx, func(in *auth.Info) error { return s.auth.IsRangePermitted(in, r.Key, r.RangeEnd) }, func() error {
		v := s.kv.Read()
		defer v.End()
		return read(v)
	})
}

// CountClientRequest counts a client call by kind (unary or stream) and the API version the
// client announced (etcd_server_client_requests_total).
func (s *Server) CountClientRequest(kind, apiVersion string) {
	s.m.clientRequests.with([2]string{kind, apiVersion}).Inc()
}

// ObserveHealthCheck records one /livez or /readyz check (kind) by name, as upstream's
// etcd_server_healthcheck and etcd_server_healthchecks_total.
func (s *Server) ObserveHealthCheck(kind, name string, ok bool) {
	status, v := "error", 0.0
	if ok {
		status, v = "success", 1
	}
	s.m.healthCheck.WithLabelValues(kind, name).Set(v)
	s.m.healthChecks.WithLabelValues(kind, name, status).Inc()
}

// RequestTimeout is how long a request may wait for raft (upstream's ReqTimeout).
func (s *Server) RequestTimeout() time.Duration { return s.cfg.requestTimeout() }

// ObserveHealth counts a /health answer.
func (s *Server) ObserveHealth(ok bool) {
	if ok {
		s.m.healthSuccess.Inc()
	} else {
		s.m.healthFailure.Inc()
	}
}

// Put writes through raft.
func (s *Server) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := s.checkQuota(ctx, len(r.Key)+len(r.Value)); err != nil {
		return nil, err
	}
	return proposeAs[*pb.PutResponse](ctx, s, &pb.InternalRaftRequest{Put: r})
}

// DeleteRange deletes through raft.
func (s *Server) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	return proposeAs[*pb.DeleteRangeResponse](ctx, s, &pb.InternalRaftRequest{DeleteRange: r})
}

// Txn runs a transaction: read-only ones are served like reads, others go through raft.
func (s *Server) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if apply.TxnReadOnly(r) {
		return s.readTxn(ctx, r)
	}
	if apply.TxnHasPuts(r) {
		if err := s.checkQuota(ctx, r.Size()); err != nil {
			return nil, err
		}
	}
	return proposeAs[*pb.TxnResponse](ctx, s, &pb.InternalRaftRequest{Txn: r})
}

// readTxn serves a transaction that writes nothing like a read, without raft.
func (s *Server) readTxn(ctx context.Context, r *pb.TxnRequest) (resp *pb.TxnResponse, err error) {
	defer func(start time.Time) { s.m.observeRequest("ReadonlyTxn", start, err) }(time.Now())
	if !apply.TxnSerializable(r) {
		if err := s.LinearizableReadNotify(ctx); err != nil {
			return nil, err
		}
	}
	err = s.checkedRead(ctx, func(in *auth.Info) error { return apply.Permitted(s.auth, s.les, in, &pb.InternalRaftRequest{Txn: r}) }, func() error {
		v := s.kv.Read()
		defer v.End()
		var err error
		resp, err = apply.ReadOnlyTxn(v, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Compact compacts the keyspace; with Physical it waits until the backend is clean too.
func (s *Server) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	res, err := s.propose(ctx, &pb.InternalRaftRequest{Compaction: r})
	if err != nil {
		return nil, err
	}
	if res.err != nil {
		return nil, res.err
	}
	if r.Physical && res.physc != nil {
		select {
		case <-res.physc:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.stopping:
			return nil, ErrStopped
		}
	}
	resp := res.resp.(*pb.CompactionResponse)
	resp.Header.Revision = s.kv.Rev()
	return resp, nil
}

// LeaseGrant creates a lease; ID 0 lets the server choose one.
func (s *Server) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	for r.ID == 0 {
		r.ID = int64(s.reqIDs.next() & (1<<63 - 1))
	}
	if r.TTL > lease.MaxTTL {
		return nil, lease.ErrTTLTooLarge
	}
	if err := s.checkQuota(ctx, 16); err != nil {
		return nil, err
	}
	return proposeAs[*pb.LeaseGrantResponse](ctx, s, &pb.InternalRaftRequest{LeaseGrant: r})
}

// LeaseRevoke revokes a lease and deletes its keys.
func (s *Server) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	return proposeAs[*pb.LeaseRevokeResponse](ctx, s, &pb.InternalRaftRequest{LeaseRevoke: r})
}

// LeaseRenew restarts a lease's TTL. Only the leader judges expiry, so a follower forwards.
func (s *Server) LeaseRenew(ctx context.Context, id int64) (int64, error) {
	if err := s.checkLeaseUse(ctx, id, true); err != nil {
		return -1, err
	}
	if s.Leader() == s.id {
		if err := s.waitForLease(ctx, id); err != nil {
			return -1, err
		}
		return s.renewLocal(ctx, id)
	}
	body, _ := (&pb.LeaseKeepAliveRequest{ID: id}).Marshal()
	out, err := s.forwardToLeader(ctx, leasePath, body)
	if err != nil {
		return -1, err
	}
	var resp pb.LeaseKeepAliveResponse
	if err := resp.Unmarshal(out); err != nil {
		return -1, fmt.Errorf("decode leader's keep-alive answer: %w", err)
	}
	return resp.TTL, nil
}

func (s *Server) renewLocal(ctx context.Context, id int64) (int64, error) {
	if err := s.confirmLeadership(ctx); err != nil {
		return -1, err
	}
	ttl, checkpointed, err := s.les.Renew(ctx, id)
	if err == nil {
		s.m.leaseRenewed.Inc()
	}
	if checkpointed && s.checkpointing() {
		// Clear the checkpoint everywhere, or a new leader would start this renewed lease from
		// its old, shorter remaining TTL (as upstream, only while the gate is on).
		go s.checkpointLeases(map[int64]int64{id: 0})
	}
	if errors.Is(err, lease.ErrNotPrimary) {
		return -1, ErrNotLeader
	}
	return ttl, err
}

// confirmLeadership makes sure, with a ReadIndex round, that this member still leads before it
// renews a lease. A leader cut off from the others does not know at once that another member
// leads: a renewal it granted would never reach the new leader, which could expire the lease
// before the TTL the client was given (the simulation caught it: 200 ms early). A quorum that
// answered the round has heard from this leader, so no other member can lead for an election
// timeout after it, and the new leader's lessor extends every lease past that. Upstream skips the
// round while its raft loop ticks, and so can grant such a renewal.
func (s *Server) confirmLeadership(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout())
	defer cancel()
	if err := s.LinearizableReadNotify(ctx); err != nil || s.Leader() != s.id {
		s.log.Warn("could not confirm this member's leadership before renewing a lease", "error", err)
		return ErrNotLeader
	}
	return nil
}

// LeaseTimeToLive describes a lease; the remaining TTL is known only to the leader.
func (s *Server) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	if r.Keys {
		// The keys are shown only to a caller that may read each of them.
		if err := s.checkLeaseUse(ctx, r.ID, false); err != nil {
			return nil, err
		}
	}
	if s.Leader() == s.id {
		failpoint.At(failpoint.BeforeLookupWhenLeaseTimeToLive)
		return s.ttlLocal(r)
	}
	body, _ := r.Marshal()
	out, err := s.forwardToLeader(ctx, leaseInternalPath, wrapLeaseInternal(body))
	if err != nil {
		return nil, err
	}
	var resp pb.LeaseTimeToLiveResponse
	inner, err := unwrapLeaseInternal(out)
	if err == nil {
		err = resp.Unmarshal(inner)
	}
	if err != nil {
		return nil, fmt.Errorf("decode leader's time-to-live answer: %w", err)
	}
	return &resp, nil
}

func (s *Server) ttlLocal(r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	in, err := s.les.Lookup(r.ID)
	if err != nil {
		return nil, err
	}
	resp := &pb.LeaseTimeToLiveResponse{Header: &pb.ResponseHeader{Revision: s.kv.Rev()}, ID: in.ID, TTL: in.RemainingTTL, GrantedTTL: in.TTL}
	if r.Keys {
		resp.Keys = in.Keys
	}
	return resp, nil
}

// LeaseLeases lists every lease.
func (s *Server) LeaseLeases(ctx context.Context) (*pb.LeaseLeasesResponse, error) {
	resp := &pb.LeaseLeasesResponse{Header: &pb.ResponseHeader{Revision: s.kv.Rev()}}
	ids := s.les.List()
	for _, id := range ids {
		// Only a caller that may read every key of every lease sees the list.
		if err := s.checkLeaseUse(ctx, id, false); err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		resp.Leases = append(resp.Leases, &pb.LeaseStatus{ID: id})
	}
	return resp, nil
}

// Alarm activates, deactivates or lists alarms.
func (s *Server) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	if r.Action == pb.AlarmRequest_GET {
		return &pb.AlarmResponse{Header: &pb.ResponseHeader{Revision: s.kv.Rev()}, Alarms: s.alarms.list(r.Alarm)}, nil
	}
	return proposeAs[*pb.AlarmResponse](ctx, s, &pb.InternalRaftRequest{Alarm: r})
}

// Alarms lists the active alarms.
func (s *Server) Alarms() []*pb.AlarmMember { return s.alarms.list(pb.AlarmType_NONE) }

// checkQuota refuses a write that would grow the file past the quota and raises NOSPACE.
func (s *Server) checkQuota(ctx context.Context, cost int) error {
	if s.alarms.active(pb.AlarmType_NOSPACE) {
		return ErrNoSpace
	}
	// A write costs its bytes plus bookkeeping (revision key, index, bbolt page overhead).
	const overhead = 256
	if s.be.Size()+int64(cost+overhead) <= s.cfg.QuotaBackendBytes {
		return nil
	}
	s.log.Warn("database space exceeded", "quota-size-bytes", s.cfg.QuotaBackendBytes, "current-size-bytes", s.be.Size())
	// As upstream, the alarm is in place (through raft) before the client hears NOSPACE.
	if _, err := s.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: s.id, Alarm: pb.AlarmType_NOSPACE}); err != nil {
		s.log.Error("failed to raise NOSPACE alarm", "error", err)
	}
	return ErrNoSpace
}
