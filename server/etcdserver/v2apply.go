package etcdserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/membership"
	"etcdx/server/v2store"
)

// A 3.5 member keeps the v2 store as upstream 3.5 does, so that a cluster mixing ours and
// upstream's agrees on it to the index: the membership is written under /0 at the same points
// (each write one index), every member's v2 requests are applied in raft order (the v2 API's
// keys under /1, TTL expiry by the leader's SYNC time), and raft snapshots carry the whole store.
// A v2 client may then read, compare-and-swap by index or watch from an index on any member.
// The v3 store stays the truth this member runs on; the v2 store's membership is a mirror.

// v2Mirror writes one membership change into the v2 store; a failure is logged (the v3 store
// has the change), as it would leave the mirror behind upstream's.
func (s *Server) v2Mirror(what string, write func(st *v2store.Store) error) {
	if s.v2 == nil {
		return
	}
	if err := write(s.v2); err != nil {
		s.log.Error("failed to update the v2 store's membership", "change", what, "error", err)
	}
}

func (s *Server) v2AddMember(m membership.Member) {
	s.v2Mirror("add member", func(st *v2store.Store) error {
		v, err := membership.V2RaftAttributesValue(m)
		if err == nil {
			_, err = st.Create(membership.V2MemberKey(m.ID)+"/raftAttributes", false, v, false, v2store.Expiry{})
		}
		return err
	})
}

func (s *Server) v2UpdateMember(m membership.Member) {
	s.v2Mirror("update member", func(st *v2store.Store) error {
		v, err := membership.V2RaftAttributesValue(m)
		if err == nil {
			_, err = st.Update(membership.V2MemberKey(m.ID)+"/raftAttributes", v, v2store.Expiry{})
		}
		return err
	})
}

func (s *Server) v2RemoveMember(id uint64) {
	s.v2Mirror("remove member", func(st *v2store.Store) error {
		if _, err := st.Delete(membership.V2MemberKey(id), true, true); err != nil {
			return err
		}
		_, err := st.Create(membership.V2RemovedKey(id), false, "", false, v2store.Expiry{})
		return err
	})
}

func (s *Server) v2SetAttributes(m membership.Member) {
	s.v2Mirror("publish attributes", func(st *v2store.Store) error {
		v, err := membership.V2AttributesValue(m)
		if err == nil {
			_, err = st.Set(membership.V2MemberKey(m.ID)+"/attributes", false, v, v2store.Expiry{})
		}
		return err
	})
}

func (s *Server) v2SetClusterVersion(ver string) {
	s.v2Mirror("set cluster version", func(st *v2store.Store) error {
		_, err := st.Set(membership.V2ClusterVersionKey, false, ver, v2store.Expiry{})
		return err
	})
}

// v2ConfChange mirrors a configuration change every member accepted.
func (s *Server) v2ConfChange(cc raftpb.ConfChange, m membership.Member, promote bool) {
	switch {
	case cc.Type == raftpb.ConfChangeRemoveNode:
		s.v2RemoveMember(cc.NodeID)
	case cc.Type == raftpb.ConfChangeUpdateNode || promote:
		s.v2UpdateMember(m)
	default:
		s.v2AddMember(m)
	}
}

// v2Result is the answer to a v2 request: the event, or the v2 store's error.
type v2Result struct {
	Event *v2store.Event
}

// applyV2 applies a v2 request that is not a membership change, as upstream 3.5's applier.
func (s *Server) applyV2(r *pb.Request) *applyResult {
	if s.v2 == nil {
		return &applyResult{err: fmt.Errorf("v2 request %s %s: this member keeps no v2 store", r.Method, r.Path)}
	}
	x := v2store.Expiry{Refresh: r.Refresh != nil && *r.Refresh}
	if r.Expiration != 0 {
		x.Time = time.Unix(0, r.Expiration)
	}
	var ev *v2store.Event
	var err error
	switch r.Method {
	case http.MethodPost:
		ev, err = s.v2.Create(r.Path, r.Dir, r.Val, true, x)
	case http.MethodPut:
		switch {
		case r.PrevExist != nil && *r.PrevExist && r.PrevIndex == 0 && r.PrevValue == "":
			ev, err = s.v2.Update(r.Path, r.Val, x)
		case r.PrevExist != nil && *r.PrevExist:
			ev, err = s.v2.CompareAndSwap(r.Path, r.PrevValue, r.PrevIndex, r.Val, x)
		case r.PrevExist != nil:
			ev, err = s.v2.Create(r.Path, r.Dir, r.Val, false, x)
		case r.PrevIndex > 0 || r.PrevValue != "":
			ev, err = s.v2.CompareAndSwap(r.Path, r.PrevValue, r.PrevIndex, r.Val, x)
		default:
			ev, err = s.v2.Set(r.Path, r.Dir, r.Val, x)
		}
	case http.MethodDelete:
		if r.PrevIndex > 0 || r.PrevValue != "" {
			ev, err = s.v2.CompareAndDelete(r.Path, r.PrevValue, r.PrevIndex)
		} else {
			ev, err = s.v2.Delete(r.Path, r.Dir, r.Recursive)
		}
	case "QGET":
		ev, err = s.v2.Get(r.Path, r.Recursive, r.Sorted)
	case "SYNC":
		s.v2.DeleteExpiredKeys(time.Unix(0, r.Time))
		return &applyResult{resp: &v2Result{}}
	default:
		return &applyResult{err: fmt.Errorf("v2 request: unknown method %q", r.Method)}
	}
	if err != nil {
		return &applyResult{err: err}
	}
	return &applyResult{resp: &v2Result{Event: ev}}
}

// v2StoreDocAt35 is the data of a raft snapshot a 3.5 member takes: the whole v2 store.
func (s *Server) v2StoreDocAt35() ([]byte, error) {
	data, err := s.v2.Save()
	if err != nil {
		return nil, fmt.Errorf("encode the v2 store for a snapshot: %w", err)
	}
	return data, nil
}

// replayV2 applies the v2 store's part of a normal entry the database already holds (the v2
// store is in no database: after a restart it is the snapshot's plus the log replayed on it).
func (s *Server) replayV2(e raftpb.Entry) {
	if s.v2 == nil || len(e.Data) == 0 {
		return
	}
	r3, v2, ok := s.decodeEntry(e)
	switch {
	case !ok:
	case v2 != nil:
		s.applyV2(v2)
	case r3.ClusterMemberAttrSet != nil:
		a := r3.ClusterMemberAttrSet
		if a.MemberAttributes != nil && s.replayMem.Get(a.Member_ID) != nil {
			s.v2SetAttributes(membership.Member{ID: a.Member_ID, Name: a.MemberAttributes.Name, ClientURLs: a.MemberAttributes.ClientUrls})
		}
	case r3.ClusterVersionSet != nil:
		s.v2SetClusterVersion(r3.ClusterVersionSet.Ver)
	}
}

// v2SyncInterval is how often a leader whose v2 store has expiring nodes proposes the time they
// expire against (upstream's SYNC every 500 ms).
const v2SyncInterval = 500 * time.Millisecond

// v2Expirer proposes SYNC requests while this member leads and the v2 store has TTLs: every
// member then expires the same nodes at the same index, by the leader's clock.
func (s *Server) v2Expirer() {
	t := time.NewTicker(v2SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.stopping:
			return
		}
		if s.Leader() != s.id || !s.v2.HasTTLKeys() {
			continue
		}
		data, err := (&pb.Request{Method: "SYNC", ID: s.reqIDs.next(), Time: time.Now().UnixNano()}).Marshal()
		if err != nil {
			s.log.Error("failed to encode a v2 SYNC request", "error", err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
		if err := s.node.Propose(ctx, data); err != nil {
			s.log.Debug("v2 SYNC request not proposed", "error", err)
		}
		cancel()
	}
}
