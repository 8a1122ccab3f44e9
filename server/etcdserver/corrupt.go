package etcdserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/mvcc"
	"etcdx/server/transport"
)

// peerHashKVPath serves this member's hash of the key space to peers, at upstream's path and
// in upstream's encoding (JSON of HashKVRequest and HashKVResponse), for corruption checks.
const peerHashKVPath = "/members/hashkv"

// errDataInconsistency is the initial check's refusal to start.
var errDataInconsistency = errors.New("found data inconsistency with peers")

func (s *Server) serveHashKV(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if cid := r.Header.Get(transport.HeaderClusterID); cid != "" && cid != fmt.Sprintf("%x", s.ClusterID()) {
		http.Error(w, "cluster ID mismatch", http.StatusPreconditionFailed)
		return
	}
	var req pb.HashKVRequest
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && len(b) > 0 {
		err = json.Unmarshal(b, &req)
	}
	if err != nil {
		http.Error(w, "error unmarshalling request", http.StatusBadRequest)
		return
	}
	hash, rev, compactRev, err := s.kv.HashKV(req.Revision)
	if err != nil {
		s.log.Warn("failed to get hashKV", "requested-revision", req.Revision, "error", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hashRev := req.Revision
	if hashRev <= 0 {
		hashRev = rev
	}
	out, err := json.Marshal(&pb.HashKVResponse{Header: &pb.ResponseHeader{Revision: rev, MemberId: s.id, ClusterId: s.ClusterID()},
		Hash: hash, CompactRevision: compactRev, HashRevision: hashRev})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set(transport.HeaderClusterID, fmt.Sprintf("%x", s.ClusterID()))
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// peerHashKV asks one peer URL for its hash at rev.
func (s *Server) peerHashKV(ctx context.Context, url string, rev int64) (*pb.HashKVResponse, error) {
	body, _ := json.Marshal(&pb.HashKVRequest{Revision: rev})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+peerHashKVPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(transport.HeaderClusterID, fmt.Sprintf("%x", s.ClusterID()))
	resp, err := s.peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusBadRequest && strings.Contains(string(b), mvcc.ErrCompacted.Error()):
		return nil, mvcc.ErrCompacted
	case resp.StatusCode == http.StatusBadRequest && strings.Contains(string(b), mvcc.ErrFutureRev.Error()):
		return nil, mvcc.ErrFutureRev
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	var out pb.HashKVResponse
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return &out, nil
}

// InitialCorruptCheck compares this member's hash with every peer's at this member's revision
// before it joins raft (upstream's InitialCorruptCheck gate): a peer at the same compact
// revision with another hash means one copy of the data is damaged, and the member refuses to
// start. Peers that cannot answer are logged and skipped, as upstream.
func (s *Server) InitialCorruptCheck(ctx context.Context) error {
	id := fmt.Sprintf("%x", s.id)
	s.log.Info("starting initial corruption check", "local-member-id", id, "timeout", s.cfg.electionTimeout()*5)
	hash, rev, compactRev, err := s.kv.HashKV(0)
	if err != nil {
		return fmt.Errorf("%s failed to fetch hash (%w)", id, err)
	}
	mismatch := 0
	for _, m := range s.mem.List() {
		if m.ID == s.id || m.IsLearner {
			continue
		}
		var resp *pb.HashKVResponse
		var lastErr error
		for _, u := range m.PeerURLs {
			cctx, cancel := context.WithTimeout(ctx, s.cfg.electionTimeout()*5)
			resp, lastErr = s.peerHashKV(cctx, u, rev)
			cancel()
			if lastErr == nil {
				break
			}
		}
		fields := []any{"local-member-id", id, "local-member-revision", rev, "local-member-compact-revision", compactRev,
			"local-member-hash", hash, "remote-peer-id", fmt.Sprintf("%x", m.ID), "remote-peer-endpoints", m.PeerURLs}
		switch {
		case resp != nil && resp.Hash != hash && resp.CompactRevision == compactRev:
			s.log.Warn("found different hash values from remote peer", append(fields, "remote-peer-revision", resp.Header.GetRevision(),
				"remote-peer-compact-revision", resp.CompactRevision, "remote-peer-hash", resp.Hash)...)
			mismatch++
		case resp != nil && resp.Hash != hash:
			s.log.Warn("found different compact revision values from remote peer", append(fields, "remote-peer-revision", resp.Header.GetRevision(),
				"remote-peer-compact-revision", resp.CompactRevision, "remote-peer-hash", resp.Hash)...)
		case errors.Is(lastErr, mvcc.ErrFutureRev):
			s.log.Warn("cannot fetch hash from slow remote peer", append(fields, "error", lastErr.Error())...)
		case errors.Is(lastErr, mvcc.ErrCompacted):
			s.log.Warn("cannot fetch hash from remote peer; local member is behind", append(fields, "error", lastErr.Error())...)
		case lastErr != nil:
			s.log.Warn("failed to get hashKV from peer", append(fields, "error", lastErr.Error())...)
		}
	}
	if mismatch > 0 {
		return fmt.Errorf("%s %w", id, errDataInconsistency)
	}
	s.log.Info("initial corruption checking passed; no corruption", "local-member-id", id)
	return nil
}

// Restarted says whether the member started from data it already had (a new member has
// nothing to check).
func (s *Server) Restarted() bool { return s.restarted }
