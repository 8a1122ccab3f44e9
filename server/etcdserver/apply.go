package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/apply"
	"etcdx/server/auth"
	"etcdx/server/backend"
	"etcdx/server/failpoint"
	"etcdx/server/features"
	"etcdx/server/membership"
	"etcdx/server/schema"
	"etcdx/server/version"
)

// applyResult is what the applier hands back to the proposer.
type applyResult struct {
	resp any
	err  error
	// physc closes when a compaction has also cleaned the backend.
	physc <-chan struct{}
	// applied and appliedAt bound this member's apply of the entry (for trace spans).
	applied, appliedAt time.Time
}

// decodeEntry reads a normal entry's request. Upstream 3.5 proposes a member's published
// attributes (and may set the cluster version) as bare v2 requests: they become the v3 requests
// upstream 3.6 applies in their place. Any other v2 request (the v2 API's writes, the leader's
// SYNC, a quorum read) comes back as v2, for a member that keeps the v2 store; one that keeps
// none skips it, as upstream 3.6. ok is false for an entry with nothing to apply.
func (s *Server) decodeEntry(e raftpb.Entry) (r3 *pb.InternalRaftRequest, v2 *pb.Request, ok bool) {
	r, bare, err := membership.DecodeEntryData(e.Data)
	switch {
	case r != nil:
		return r, nil, true
	case bare == nil || bare.Method == "":
		s.log.Error("skipping undecodable raft entry", "index", e.Index, "error", err)
		return nil, nil, false
	}
	v3, err := membership.FromV2(bare)
	switch {
	case err == nil:
		return v3, nil, true
	case s.v2 != nil:
		return nil, bare, true
	case errors.Is(err, membership.ErrV2NoEffect):
		s.log.Debug("skipping a v2 request of etcd 3.5 with no v3 effect", "index", e.Index, "method", bare.Method)
	default:
		s.log.Error("skipping a v2 request etcd 3.6 does not apply", "index", e.Index, "error", err.Error())
	}
	return nil, nil, false
}

func (s *Server) applyEntry(e raftpb.Entry) {
	if e.Index <= s.replayedTo {
		s.replayApplied(e)
		return
	}
	start := time.Now()
	b := s.be.Batch()
	var id uint64
	var res *applyResult
	switch e.Type {
	case raftpb.EntryNormal:
		failpoint.At(failpoint.BeforeApplyOneEntryNormal)
		if len(e.Data) == 0 {
			break // a new leader's empty entry
		}
		r, v2, ok := s.decodeEntry(e)
		if !ok {
			break
		}
		if v2 != nil {
			id = v2.ID
			res = s.applyV2(v2)
			break
		}
		if r.Header != nil {
			id = r.Header.ID
		}
		opStart := time.Now()
		res = s.applyRequest(b, r, e.Index)
		s.m.applyDuration.with(outcome{requestOp(r), res == nil || res.err == nil}).Observe(time.Since(opStart).Seconds())
	case raftpb.EntryConfChange:
		failpoint.At(failpoint.BeforeApplyOneConfChange)
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			s.log.Error("skipping undecodable conf change", "index", e.Index, "error", err)
			break
		}
		res = s.applyConfChange(b, cc)
		id = cc.ID
	}
	// The consistent index goes into the same batch as the entry's changes, so a crash leaves
	// either both or neither.
	err := schema.PutConsistentIndex(b, e.Index, e.Term)
	if uerr := b.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		if berr := s.be.Err(); berr != nil {
			s.fatal("failed to commit tx", berr)
		} else {
			s.fatal("failed to write to a bucket", err)
		}
	}
	if d := time.Since(start); d > s.cfg.WarningApplyDuration {
		s.m.slowApply.Inc()
		s.log.Warn("apply request took too long", "took", d, "expected-duration", s.cfg.WarningApplyDuration, "index", e.Index)
	}
	if id != 0 {
		if res == nil {
			res = &applyResult{}
		}
		res.applied, res.appliedAt = start, time.Now()
		s.waits.trigger(id, res)
	}
}

// replayApplied handles an entry whose effects are already in the database: raft still has to
// hear about configuration changes, judged against the membership as it was at that entry.
func (s *Server) replayApplied(e raftpb.Entry) {
	if e.Type != raftpb.EntryConfChange {
		s.replayV2(e)
		return
	}
	var cc raftpb.ConfChange
	if err := cc.Unmarshal(e.Data); err != nil {
		s.log.Error("skipping undecodable conf change", "index", e.Index, "error", err)
		return
	}
	m, promote, err := membership.DecodeConfChange(cc)
	if err == nil {
		err = s.replayMem.Validate(cc, m, promote, s.cfg.MaxLearners)
	}
	if err != nil {
		cc.NodeID = raft.None
	} else {
		s.replayMem.Apply(cc, m)
		if rec := s.replayMem.Get(cc.NodeID); rec != nil {
			s.v2ConfChange(cc, *rec, promote)
		} else if cc.Type == raftpb.ConfChangeRemoveNode {
			s.v2RemoveMember(cc.NodeID)
		}
		if cur := s.mem.Get(cc.NodeID); promote && cur != nil && !cur.IsLearner {
			// upstream's event for a promotion the v3 store already holds
			s.log.Info("ignore already promoted member in v3store", "cluster-id", fmt.Sprintf("%x", s.ClusterID()),
				"local-member-id", fmt.Sprintf("%x", s.id), "promoted-member-id", fmt.Sprintf("%x", cc.NodeID))
		}
	}
	s.confState = *s.node.ApplyConfChange(cc)
}

func (s *Server) applyConfChange(b *backend.BatchTx, cc raftpb.ConfChange) *applyResult {
	m, promote, err := membership.DecodeConfChange(cc)
	if err == nil {
		err = s.mem.Validate(cc, m, promote, s.cfg.MaxLearners)
	}
	if err != nil {
		// Every member rejects the same change the same way; raft is told it was a no-op.
		cc.NodeID = raft.None
		s.confState = *s.node.ApplyConfChange(cc)
		return &applyResult{err: err}
	}
	s.confState = *s.node.ApplyConfChange(cc)
	promoted := promote
	rec, removed := s.mem.Apply(cc, m)
	if removed {
		if err := s.mem.Remove(b, rec.ID); err != nil {
			return &applyResult{err: err}
		}
		s.m.v2StoreWrite("delete", "create") // the member's entry, then its removal record
		s.v2RemoveMember(rec.ID)
		s.tr.RemovePeer(rec.ID)
		s.log.Info("removed member", "cluster-id", fmt.Sprintf("%x", s.ClusterID()), "removed-remote-peer-id", fmt.Sprintf("%x", rec.ID), "member-id", fmt.Sprintf("%x", rec.ID))
		if rec.ID == s.id {
			s.log.Warn("the member has been permanently removed from the cluster; stopping")
			s.removedSelf.Store(true)
			go func() {
				s.TransferLeadershipAway(context.Background())
				s.Stop()
			}()
		}
		return &applyResult{}
	}
	if err := s.mem.Save(b, rec); err != nil {
		return &applyResult{err: err}
	}
	if cc.Type == raftpb.ConfChangeUpdateNode || promoted {
		s.m.v2StoreWrite("update")
	} else {
		s.m.v2StoreWrite("create")
	}
	s.v2ConfChange(cc, *rec, promoted)
	s.tr.AddPeer(rec.ID, rec.PeerURLs)
	// Upstream's message for each kind of change.
	switch {
	case cc.Type == raftpb.ConfChangeUpdateNode:
		s.log.Info("updated member", "cluster-id", fmt.Sprintf("%x", s.ClusterID()), "updated-remote-peer-id", fmt.Sprintf("%x", rec.ID),
			"updated-remote-peer-urls", rec.PeerURLs)
	case promoted:
		if s.Leader() == s.id {
			s.m.learnerPromotions.Inc()
		}
		s.log.Info("promote member", "cluster-id", fmt.Sprintf("%x", s.ClusterID()), "promoted-member-id", fmt.Sprintf("%x", rec.ID))
	default:
		s.log.Info("added member", "cluster-id", fmt.Sprintf("%x", s.ClusterID()), "added-peer-id", fmt.Sprintf("%x", rec.ID),
			"added-peer-peer-urls", rec.PeerURLs, "added-peer-is-learner", rec.IsLearner)
	}
	return &applyResult{}
}

func (s *Server) applyRequest(b *backend.BatchTx, r *pb.InternalRaftRequest, index uint64) *applyResult {
	noSpace := s.alarms.active(pb.AlarmType_NOSPACE)
	// As upstream: once a member's data is known to diverge, the cluster takes no more changes
	// to keys or leases until the alarm is disarmed.
	if s.alarms.active(pb.AlarmType_CORRUPT) && (r.Put != nil || r.DeleteRange != nil || r.Txn != nil ||
		r.Compaction != nil || r.LeaseGrant != nil || r.LeaseRevoke != nil) {
		return &applyResult{err: ErrCorrupt}
	}
	// The proposer named its caller in the header; every member checks the same permissions
	// against the same auth state, so all reach the same answer.
	in := &auth.Info{}
	if r.Header != nil {
		in.Username, in.Revision = r.Header.Username, r.Header.AuthRevision
	}
	if needsAdmin(r, s.cfg.Level) {
		if err := s.auth.IsAdminPermitted(in); err != nil {
			return &applyResult{err: err}
		}
	}
	if res, ok := s.applyAuth(b, r, in, index); ok {
		return res
	}
	if err := s.checkApplyAuth(in, r); err != nil {
		return &applyResult{err: err}
	}
	if noSpace && (r.Put != nil || r.LeaseGrant != nil || (r.Txn != nil && apply.TxnHasPuts(r.Txn))) {
		return &applyResult{err: ErrNoSpace}
	}
	// Persisted from cluster version 3.6 on, or earlier with upstream's LeaseCheckpointPersist gate.
	persist := r.LeaseCheckpoint != nil && (version.LeaseCheckpointPersist.On(s.cfg.Level, s.ClusterVersion()) || s.cfg.Features.Enabled(features.LeaseCheckpointPersist))
	if res, ok := apply.Apply(b, s.kv, s.les, r, persist); ok {
		if errors.Is(res.Err, apply.ErrHalfApplied) {
			// Only a storage failure gets here (every refusal is found before the first
			// write): its batch is failed, nothing of it is committed, and the member stops.
			s.fatal("unexpected error during txn with writes", res.Err)
		}
		s.appliedKind(r, res)
		return &applyResult{resp: res.Resp, err: res.Err, physc: res.Compacted}
	}
	switch {
	case r.Alarm != nil:
		resp, err := s.alarms.apply(b, r.Alarm, s.id)
		if err == nil && r.Alarm.Action == pb.AlarmRequest_ACTIVATE {
			s.log.Warn("alarm raised", "alarm", r.Alarm.Alarm.String(), "from", fmt.Sprintf("%x", r.Alarm.MemberID))
		}
		return &applyResult{resp: resp, err: err}
	case r.ClusterMemberAttrSet != nil:
		a := r.ClusterMemberAttrSet
		m := s.mem.Get(a.Member_ID)
		if m == nil {
			return &applyResult{err: fmt.Errorf("member %x not found", a.Member_ID)}
		}
		m.Name, m.ClientURLs = a.MemberAttributes.Name, a.MemberAttributes.ClientUrls
		// Empty when an upstream binary published: the leader then asks it for its version.
		m.ServerVersion = membership.PublishedVersion(a.MemberAttributes)
		if err := s.mem.Save(b, m); err != nil {
			return &applyResult{err: err}
		}
		s.m.v2StoreWrite("set")
		s.v2SetAttributes(*m)
		s.wakeVersions()
		return &applyResult{}
	case r.ClusterVersionSet != nil:
		s.m.v2StoreWrite("set")
		res := s.applyClusterVersion(b, r.ClusterVersionSet.Ver, index)
		if res.err == nil {
			s.v2SetClusterVersion(r.ClusterVersionSet.Ver)
		}
		return res
	case r.DowngradeInfoSet != nil:
		return s.applyDowngradeInfo(b, r.DowngradeInfoSet)
	default:
		return &applyResult{err: fmt.Errorf("unsupported raft request")}
	}
}

// appliedKind logs and counts what the member's metrics and log say of a key or lease request
// it applied.
func (s *Server) appliedKind(r *pb.InternalRaftRequest, res apply.Result) {
	if res.Err != nil {
		return
	}
	switch {
	case r.Compaction != nil:
		s.log.Info("compacted keyspace", "revision", r.Compaction.Revision)
	case r.LeaseGrant != nil:
		s.m.leaseGranted.Inc()
		s.m.leaseTTL.Observe(float64(res.Resp.(*pb.LeaseGrantResponse).TTL))
	case r.LeaseRevoke != nil:
		s.m.leaseRevoked.Inc()
	}
}

type applyBatch struct {
	ents []raftpb.Entry
	snap raftpb.Snapshot
	// applied is closed when the batch is applied; the raft loop waits on it for conf changes.
	applied chan struct{}
}

func (s *Server) applyLoop() {
	defer s.wg.Done()
	for {
		select {
		case b := <-s.applyc:
			s.applyBatch(b)
			close(b.applied)
		case m := <-s.msgSnapC:
			s.sendSnapshot(m)
		case <-s.stopping:
			return
		}
	}
}

func (s *Server) applyBatch(b applyBatch) {
	if !raft.IsEmptySnap(b.snap) && b.snap.Metadata.Index > s.appliedIndex.Load() {
		if err := s.installSnapshot(b.snap); err != nil {
			s.fatal("failed to install the snapshot from the leader", err)
			return
		}
		s.applyW.advance(s.appliedIndex.Load())
	}
	for _, e := range b.ents {
		if e.Index <= s.appliedIndex.Load() {
			continue
		}
		s.applyEntry(e)
		s.memSnapBytes += uint64(len(e.Data))
		s.appliedIndex.Store(e.Index)
		s.appliedTerm = e.Term
	}
	applied := s.appliedIndex.Load()
	s.m.proposalsApplied.Set(float64(applied))
	s.applyW.advance(applied)
	if toDisk, due := snapshotDue(applied, s.snapIndex, s.memSnapIndex, s.memSnapBytes, s.cfg.SnapshotCount, s.forceSnapshot); due {
		if err := s.snapshot(applied, toDisk); err != nil {
			s.log.Error("failed to take raft snapshot", "index", applied, "to-disk", toDisk, "error", err)
		}
	}
}
