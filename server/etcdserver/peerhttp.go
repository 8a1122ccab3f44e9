package etcdserver

import (
	"bytes"
	"context"
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
	"google.golang.org/protobuf/encoding/protowire"

	"etcdx/server/failpoint"
	"etcdx/server/lease"
	"etcdx/server/transport"
	"etcdx/server/version"
)

// What the peer listener serves besides raft, at upstream's paths.
const (
	// Lease calls that only the leader can answer travel to it over the peer port.
	leasePath         = "/leases"
	leaseInternalPath = "/leases/internal"
	// membersPath serves the member list to members that join an existing cluster.
	membersPath = "/members"
	// memberPromotePrefix forwards a promotion to the leader, which alone knows learner progress.
	memberPromotePrefix = "/members/promote/"
	// downgradeEnabledPath answers "true" or "false", as upstream's does.
	downgradeEnabledPath = "/downgrade/enabled"
)

// Process hands a message from a peer to raft (transport.Raft), but for the ones a leader
// takes itself: proposals to batch, and followers' reads it answers (forwardedreads.go).
func (s *Server) Process(ctx context.Context, m raftpb.Message) error {
	if s.mem.IsRemoved(m.From) {
		return fmt.Errorf("%w %x", transport.ErrMemberRemoved, m.From)
	}
	s.peerStats.received(m, time.Now())
	if m.Type == raftpb.MsgProp && onlyNormalEntries(m.Entries) {
		s.processRemoteProposal(m)
		return nil
	}
	if m.Type == raftpb.MsgReadIndex && s.lead.Load() == s.id && s.answerForwardedRead(m) {
		return nil
	}
	return s.node.Step(ctx, m)
}

// CheckPeerVersion refuses peers whose binary may not run in this cluster (transport.Raft).
func (s *Server) CheckPeerVersion(serverVersion, minClusterVersion string) error {
	cluster, dg, _ := s.vers.get()
	return version.CheckPeer(s.cfg.release(), cluster, dg, serverVersion, minClusterVersion)
}

// IsIDRemoved reports whether id was removed from the cluster (transport.Raft).
func (s *Server) IsIDRemoved(id uint64) bool { return s.mem.IsRemoved(id) }

// ReportUnreachable tells raft a peer could not be reached (transport.Raft).
func (s *Server) ReportUnreachable(id uint64) {
	s.peerStats.unreachable(id)
	s.node.ReportUnreachable(id)
}

// ReportSnapshot tells raft how sending a snapshot went (transport.Raft).
func (s *Server) ReportSnapshot(id uint64, st raft.SnapshotStatus) { s.node.ReportSnapshot(id, st) }

// PeerHandler serves the peer listener: raft streams and leader-forwarded lease calls.
func (s *Server) PeerHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/raft", s.tr.Handler())
	mux.Handle("/raft/", s.tr.Handler())
	mux.HandleFunc(leasePath, s.serveLeaseRenew)
	mux.HandleFunc(leaseInternalPath, s.serveLeaseTTL)
	mux.HandleFunc(membersPath, s.serveMembers)
	mux.HandleFunc(peerHashKVPath, s.serveHashKV)
	mux.HandleFunc(memberPromotePrefix, s.servePromote)
	mux.HandleFunc(downgradeEnabledPath, s.serveDowngradeEnabled)
	return mux
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return b, true
}

// leaseHTTPError maps errors to statuses the forwarding member turns back into errors.
func leaseHTTPError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, lease.ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, ErrNotLeader), errors.Is(err, lease.ErrNotPrimary):
		http.Error(w, ErrNotLeader.Error(), http.StatusPreconditionFailed)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (s *Server) serveLeaseRenew(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r)
	if !ok {
		return
	}
	var req pb.LeaseKeepAliveRequest
	if err := req.Unmarshal(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	failpoint.At(failpoint.BeforeServeHTTPLeaseRenew)
	ttl, err := s.renewLocal(r.Context(), req.ID)
	if err != nil {
		leaseHTTPError(w, err)
		return
	}
	resp := &pb.LeaseKeepAliveResponse{Header: &pb.ResponseHeader{}, ID: req.ID, TTL: ttl}
	out, _ := resp.Marshal()
	w.Header().Set("Content-Type", "application/protobuf")
	w.Write(out)
}

func (s *Server) serveLeaseTTL(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r)
	if !ok {
		return
	}
	var req pb.LeaseTimeToLiveRequest
	inner, err := unwrapLeaseInternal(b)
	if err == nil {
		err = req.Unmarshal(inner)
	}
	if err != nil {
		http.Error(w, "error unmarshalling request", http.StatusBadRequest)
		return
	}
	if s.Leader() != s.id {
		leaseHTTPError(w, ErrNotLeader)
		return
	}
	failpoint.At(failpoint.BeforeLookupWhenForwardLeaseTimeToLive)
	ttl, err := s.ttlLocal(&req)
	if err != nil {
		leaseHTTPError(w, err)
		return
	}
	out, _ := ttl.Marshal()
	w.Header().Set("Content-Type", "application/protobuf")
	w.Write(wrapLeaseInternal(out))
}

// Upstream wraps the time-to-live request and answer it forwards to the leader in
// leasepb.LeaseInternalRequest and LeaseInternalResponse: the message as field 1.
func wrapLeaseInternal(msg []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), msg)
}

func unwrapLeaseInternal(b []byte) ([]byte, error) {
	var inner []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			inner, b = v, b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		b = b[m:]
	}
	return inner, nil
}

// forwardToLeader posts body to path on the leader's peer URLs and returns the answer.
func (s *Server) forwardToLeader(ctx context.Context, path string, body []byte) ([]byte, error) {
	lead := s.Leader()
	if lead == raft.None {
		return nil, ErrNoLeader
	}
	m := s.mem.Get(lead)
	if m == nil {
		return nil, ErrNoLeader
	}
	var lastErr error
	for _, u := range m.PeerURLs {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(u, "/")+path, bytes.NewReader(body))
		if err != nil {
			cancel()
			return nil, err
		}
		req.Header.Set("Content-Type", "application/protobuf")
		resp, err := s.peerClient.Do(req)
		if err != nil {
			cancel()
			lastErr = err
			continue
		}
		out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		cancel()
		switch {
		case err != nil:
			lastErr = err
			continue
		case resp.StatusCode == http.StatusNotFound:
			return nil, lease.ErrNotFound
		case resp.StatusCode == http.StatusPreconditionFailed:
			return nil, ErrNotLeader
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("leader %x answered %s: %s", lead, resp.Status, strings.TrimSpace(string(out)))
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot reach leader %x: %w", lead, lastErr)
}

func onlyNormalEntries(ents []raftpb.Entry) bool {
	for _, e := range ents {
		if e.Type != raftpb.EntryNormal {
			return false
		}
	}
	return true
}

func (s *Server) serveDowngradeEnabled(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprint(w, strconv.FormatBool(s.DowngradeInfo().Enabled))
}
