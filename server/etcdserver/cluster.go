package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/failpoint"
	"etcdx/server/membership"
)

// ErrNotForLearner refuses requests a learner cannot serve, with upstream's wording.
var ErrNotForLearner = errors.New("etcdserver: rpc not supported for learner")

// learnerReadyFraction: a learner may be promoted once it has this much of the leader's log.
const learnerReadyFraction = 0.9

// AddMember adds a voting member or a learner and returns the new member and the list after.
func (s *Server) AddMember(ctx context.Context, peerURLs []string, learner bool) (*membership.Member, []membership.Member, error) {
	if err := s.memberBarrier(ctx); err != nil {
		return nil, nil, err
	}
	if s.mem.PeerURLInUse(peerURLs) {
		return nil, nil, membership.ErrPeerURLExist
	}
	if err := s.mayAddMember(learner); err != nil {
		return nil, nil, err
	}
	if learner && s.mem.LearnerCount() >= s.cfg.MaxLearners {
		return nil, nil, membership.ErrTooManyLearners
	}
	m := membership.Member{ID: membership.AddedMemberID(peerURLs, time.Now()), PeerURLs: peerURLs, IsLearner: learner}
	cc := raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: m.ID}
	if learner {
		cc.Type = raftpb.ConfChangeAddLearnerNode
	}
	if err := s.configure(ctx, cc, m, false); err != nil {
		return nil, nil, err
	}
	return &m, s.mem.List(), nil
}

// memberBarrier brings this member's view of the membership up to date with every change the
// cluster has committed, so a change acknowledged through one member is seen by the checks of the
// next, whichever member it goes through.
func (s *Server) memberBarrier(ctx context.Context) error {
	return s.LinearizableReadNotify(ctx)
}

// RemoveMember removes a member.
func (s *Server) RemoveMember(ctx context.Context, id uint64) ([]membership.Member, error) {
	if err := s.memberBarrier(ctx); err != nil {
		return nil, err
	}
	m := s.mem.Get(id)
	if m == nil {
		return nil, membership.ErrMemberNotFound
	}
	if err := s.mayRemoveMember(m); err != nil {
		return nil, err
	}
	if err := s.configure(ctx, raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode, NodeID: id}, *m, false); err != nil {
		return nil, err
	}
	return s.mem.List(), nil
}

// UpdateMember changes a member's peer URLs.
func (s *Server) UpdateMember(ctx context.Context, id uint64, peerURLs []string) ([]membership.Member, error) {
	if err := s.memberBarrier(ctx); err != nil {
		return nil, err
	}
	m := s.mem.Get(id)
	if m == nil {
		return nil, membership.ErrMemberNotFound
	}
	m.PeerURLs = peerURLs
	if err := s.configure(ctx, raftpb.ConfChange{Type: raftpb.ConfChangeUpdateNode, NodeID: id}, *m, false); err != nil {
		return nil, err
	}
	return s.mem.List(), nil
}

// PromoteMember makes a caught-up learner a voter. Only the leader knows how far a learner is,
// so followers forward the request.
func (s *Server) PromoteMember(ctx context.Context, id uint64) ([]membership.Member, error) {
	if s.Leader() != s.id {
		return s.forwardPromote(ctx, id)
	}
	m := s.mem.Get(id)
	if m == nil {
		return nil, membership.ErrMemberNotFound
	}
	if !m.IsLearner {
		return nil, membership.ErrNotLearner
	}
	st := s.node.Status()
	lp, ok := st.Progress[s.id]
	fp, ok2 := st.Progress[id]
	if !ok || !ok2 || float64(fp.Match) < float64(lp.Match)*learnerReadyFraction {
		return nil, membership.ErrLearnerNotReady
	}
	m.IsLearner = false
	if err := s.configure(ctx, raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: id}, *m, true); err != nil {
		return nil, err
	}
	return s.mem.List(), nil
}

// configure proposes a configuration change and waits until it is applied. Its context is
// upstream's: the member with the isPromote flag, none for a removal.
func (s *Server) configure(ctx context.Context, cc raftpb.ConfChange, m membership.Member, promote bool) error {
	if cc.Type != raftpb.ConfChangeRemoveNode {
		encode := membership.ConfChangeContext
		if promote {
			encode = membership.PromoteContext
		}
		ctxb, err := encode(m)
		if err != nil {
			return err
		}
		cc.Context = ctxb
	}
	cc.ID = s.reqIDs.next()
	ch := s.waits.register(cc.ID)
	cctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout())
	defer cancel()
	if err := s.node.ProposeConfChange(cctx, cc); err != nil {
		s.waits.trigger(cc.ID, nil)
		return s.proposeErr(ctx, err)
	}
	// A leader that has not yet applied its previous conf change appends a new one as an empty
	// entry: the change is silently lost (two member changes in quick succession through
	// different members). It is proposed again until it applies; a copy that arrives after the
	// change took effect is refused when it applies (member exists, already removed...) and
	// changes nothing, and its waiter is gone by then.
	again := time.NewTicker(s.cfg.confChangeRetry())
	defer again.Stop()
	for {
		select {
		case x := <-ch:
			if x == nil {
				return ErrStopped
			}
			return x.(*applyResult).err
		case <-again.C:
			if err := s.node.ProposeConfChange(cctx, cc); err != nil && !errors.Is(err, raft.ErrProposalDropped) {
				s.waits.trigger(cc.ID, nil)
				return s.proposeErr(ctx, err)
			}
		case <-cctx.Done():
			s.waits.trigger(cc.ID, nil)
			return s.proposeErr(ctx, cctx.Err())
		case <-s.stopping:
			return ErrStopped
		}
	}
}

// IsLearner reports whether this member is a learner.
func (s *Server) IsLearner() bool { return s.mem.IsLearner(s.id) }

func (s *Server) serveMembers(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Etcd-Cluster-ID", fmt.Sprintf("%x", s.ClusterID()))
	cluster, dg, _ := s.vers.get()
	if !cluster.IsZero() {
		w.Header().Set(headerClusterVersion, cluster.Full())
	}
	if dg.Enabled {
		w.Header().Set(headerDowngradeTarget, dg.TargetVersion)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.mem.List())
}

// servePromote answers upstream's POST /members/promote/<decimal ID>: a member that is not the
// leader forwards a promotion here, since only the leader knows how far a learner has caught
// up. A member that is not the leader forwards it on, as upstream's does.
func (s *Server) servePromote(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Etcd-Cluster-ID", fmt.Sprintf("%x", s.ClusterID()))
	idStr := strings.TrimPrefix(r.URL.Path, memberPromotePrefix)
	id, err := strconv.ParseUint(idStr, 10, 64)
	if err != nil {
		http.Error(w, fmt.Sprintf("member %s not found in cluster", idStr), http.StatusNotFound)
		return
	}
	ms, err := s.PromoteMember(r.Context(), id)
	if err != nil {
		s.log.Warn("failed to promote a member", "member-id", fmt.Sprintf("%x", id), "error", err)
		switch {
		case errors.Is(err, membership.ErrMemberNotFound):
			http.Error(w, upstreamIDNotFound+": "+err.Error(), http.StatusNotFound)
		case errors.Is(err, membership.ErrNotLearner):
			http.Error(w, upstreamMemberNotLearner+": "+err.Error(), http.StatusPreconditionFailed)
		case errors.Is(err, membership.ErrLearnerNotReady):
			http.Error(w, err.Error(), http.StatusPreconditionFailed)
		case errors.Is(err, ErrTimeout):
			http.Error(w, err.Error(), http.StatusRequestTimeout)
		default:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ms)
}

// Upstream's texts a forwarding member looks for in the leader's answer.
const (
	upstreamIDNotFound       = "membership: ID not found"
	upstreamMemberNotLearner = "membership: can only promote a learner member"
)

// forwardPromote asks the leader to promote a learner, with upstream's request and reading its
// answers (an upstream leader's or ours).
func (s *Server) forwardPromote(ctx context.Context, id uint64) ([]membership.Member, error) {
	lead := s.mem.Get(s.Leader())
	if lead == nil {
		return nil, ErrNoLeader
	}
	var lastErr error
	for _, u := range lead.PeerURLs {
		ms, err := s.postPromote(ctx, strings.TrimRight(u, "/")+memberPromotePrefix+strconv.FormatUint(id, 10))
		if err == nil || !errors.Is(err, errUnreachable) {
			return ms, err
		}
		lastErr = err
	}
	return nil, fmt.Errorf("cannot reach leader %x: %w", lead.ID, lastErr)
}

var errUnreachable = errors.New("unreachable")

func (s *Server) postPromote(ctx context.Context, url string) ([]membership.Member, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.peerClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnreachable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnreachable, err)
	}
	body := string(b)
	switch resp.StatusCode {
	case http.StatusOK:
		var ms []membership.Member
		if err := json.Unmarshal(b, &ms); err != nil {
			return nil, fmt.Errorf("decode leader's member list: %w", err)
		}
		return ms, nil
	case http.StatusRequestTimeout:
		return nil, ErrTimeout
	case http.StatusNotFound:
		return nil, membership.ErrMemberNotFound
	case http.StatusPreconditionFailed:
		switch {
		case strings.Contains(body, membership.ErrLearnerNotReady.Error()):
			return nil, membership.ErrLearnerNotReady
		case strings.Contains(body, upstreamMemberNotLearner), strings.Contains(body, membership.ErrNotLearner.Error()):
			return nil, membership.ErrNotLearner
		}
	}
	return nil, fmt.Errorf("member promote: unknown error(%s)", strings.TrimSpace(body))
}

// fetchCluster asks the peers in the initial cluster for the current members and cluster ID.
// What a joining member learns from a peer besides the member list.
const (
	headerClusterVersion  = "X-Etcd-Cluster-Version"
	headerDowngradeTarget = "X-Etcd-Downgrade-Target"
)

// healthInterval is how long a peer's stream must have been open to count as connected.
const healthInterval = 5 * time.Second

// peerView is what the strict reconfiguration checks need of the transport, now.
func (s *Server) peerView() membership.PeerView {
	since := time.Now().Add(-healthInterval)
	return membership.PeerView{Self: s.id,
		Connected: func(id uint64) bool { a := s.tr.ActiveSince(id); return !a.IsZero() && a.Before(since) },
		Active:    func(id uint64) bool { return !s.tr.ActiveSince(id).IsZero() }}
}

// mayAddMember applies the strict reconfiguration check (--strict-reconfig-check) to a new member,
// voter or learner.
func (s *Server) mayAddMember(learner bool) error {
	if !s.cfg.StrictReconfigCheck {
		return nil
	}
	err := s.mem.CheckAdd(learner, s.peerView())
	var ue *membership.UnhealthyError
	switch {
	case errors.As(err, &ue):
		s.log.Warn("rejecting member add request; local member has not been connected to majority peers, reconfigure breaks active quorum",
			"local-member-id", fmt.Sprintf("%x", s.id), "connected", ue.Connected, "voters", ue.Voters, "error", err.Error())
	case err != nil:
		s.log.Warn("rejecting member add request; not enough healthy members", "local-member-id", fmt.Sprintf("%x", s.id), "error", err.Error())
	}
	return err
}

// mayRemoveMember applies the strict reconfiguration check to removing a voter.
func (s *Server) mayRemoveMember(m *membership.Member) error {
	if !s.cfg.StrictReconfigCheck || m.IsLearner {
		return nil
	}
	err := s.mem.CheckRemoveVoter(m.ID, s.peerView())
	var ue *membership.UnhealthyError
	if errors.As(err, &ue) {
		s.log.Warn("rejecting member remove: the remaining connected voters would not form a quorum", "connected", ue.Connected, "voters", ue.Voters, "member-id", fmt.Sprintf("%x", m.ID))
	}
	return err
}

// publish records this member's name and client URLs in the replicated membership.
func (s *Server) publish() {
	failpoint.At(failpoint.BeforePublishing)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
		err := s.proposeApplied(ctx, &pb.InternalRaftRequest{ClusterMemberAttrSet: membership.Publish(s.id, s.cfg.Name, s.cfg.ClientURLs, s.cfg.release())})
		cancel()
		if err == nil {
			s.log.Info("published local member to cluster through raft", "local-member-id", fmt.Sprintf("%x", s.id),
				"name", s.cfg.Name, "client-urls", s.cfg.ClientURLs, "cluster-id", fmt.Sprintf("%x", s.ClusterID()))
			close(s.ready)
			return
		}
		select {
		case <-s.stopping:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}
