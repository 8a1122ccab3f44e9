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
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/features"
	"etcdx/server/mvcc"
	"etcdx/server/transport"
	"etcdx/server/version"
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
	hash, hashRev, rev, compactRev, err := s.kv.HashKV(req.Revision)
	if err != nil {
		s.log.Warn("failed to get hashKV", "requested-revision", req.Revision, "error", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
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
	hash, rev, _, compactRev, err := s.kv.HashKV(0)
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

// monitorCorruption runs the periodic check on the leader every CorruptCheckTime.
func (s *Server) monitorCorruption() {
	if s.cfg.CorruptCheckTime <= 0 {
		return
	}
	select {
	case <-s.ready:
	case <-s.stopping:
		return
	}
	s.log.Info("enabled corruption checking", "local-member-id", fmt.Sprintf("%x", s.id), "interval", s.cfg.CorruptCheckTime)
	t := time.NewTicker(s.cfg.CorruptCheckTime)
	defer t.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case <-t.C:
		}
		if s.Leader() != s.id || s.alarms.active(pb.AlarmType_CORRUPT) {
			continue
		}
		if err := s.periodicCorruptCheck(); err != nil {
			s.log.Warn("failed to check hash KV", "error", err.Error())
		}
	}
}

// periodicCorruptCheck is upstream's leader-side check: the leader's own hash before and after
// a linearizable read must agree at the same revision, no follower may be ahead of the leader,
// and a follower at the leader's compact revision must have its hash. Any breach raises the
// CORRUPT alarm for the member at fault.
func (s *Server) periodicCorruptCheck() error {
	hash, rev, _, compactRev, err := s.kv.HashKV(0)
	if err != nil {
		return err
	}
	type peerHash struct {
		id   uint64
		resp *pb.HashKVResponse
	}
	var peers []peerHash
	for _, m := range s.mem.List() {
		if m.ID == s.id || m.IsLearner {
			continue
		}
		for _, u := range m.PeerURLs {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.electionTimeout()*5)
			resp, err := s.peerHashKV(ctx, u, rev)
			cancel()
			if err == nil {
				peers = append(peers, peerHash{m.ID, resp})
				break
			}
			s.log.Warn("failed to get hashKV from peer", "remote-peer-id", fmt.Sprintf("%x", m.ID), "remote-peer-endpoint", u, "error", err.Error())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.electionTimeout()*5)
	err = s.LinearizableReadNotify(ctx)
	cancel()
	if err != nil {
		return err
	}
	hash2, rev2, _, compactRev2, err := s.kv.HashKV(0)
	if err != nil {
		return err
	}
	alarmed := false
	raise := func(id uint64) {
		if !alarmed {
			alarmed = true
			s.raiseCorrupt(id)
		}
	}
	if hash2 != hash && rev2 == rev && compactRev2 == compactRev {
		s.log.Warn("found hash mismatch", "revision-1", rev, "compact-revision-1", compactRev, "hash-1", hash,
			"revision-2", rev2, "compact-revision-2", compactRev2, "hash-2", hash2)
		raise(s.id)
	}
	for _, p := range peers {
		peer := fmt.Sprintf("%x", p.id)
		switch {
		case p.resp.Header.GetRevision() > rev2:
			s.log.Warn("revision from follower must be less than or equal to leader's", "leader-revision", rev2,
				"follower-revision", p.resp.Header.GetRevision(), "follower-peer-id", peer)
			raise(p.id)
		case p.resp.CompactRevision > compactRev2:
			s.log.Warn("compact revision from follower must be less than or equal to leader's", "leader-compact-revision", compactRev2,
				"follower-compact-revision", p.resp.CompactRevision, "follower-peer-id", peer)
			raise(p.id)
		case p.resp.CompactRevision == compactRev && p.resp.Hash != hash:
			s.log.Warn("same compact revision then hashes must match", "leader-compact-revision", compactRev2, "leader-hash", hash,
				"follower-compact-revision", p.resp.CompactRevision, "follower-hash", p.resp.Hash, "follower-peer-id", peer)
			raise(p.id)
		}
	}
	s.log.Info("finished peer corruption check", "number-of-peers-checked", len(peers))
	return nil
}

// monitorCompactHash is upstream's CompactHashCheck: members compact at the same revisions, so
// every CompactHashCheckTime the leader compares the hashes of the latest compacted revision
// across members; members in the minority (or, without a majority, the cluster) get the
// CORRUPT alarm.
func (s *Server) monitorCompactHash() {
	if !s.cfg.Features.Enabled(features.CompactHashCheck) || s.cfg.CompactHashCheckTime <= 0 {
		return
	}
	var checked int64
	for {
		select {
		case <-s.stopping:
			return
		case <-time.After(s.cfg.CompactHashCheckTime):
		}
		if s.Leader() != s.id || s.alarms.active(pb.AlarmType_CORRUPT) {
			continue
		}
		if rev := s.kv.CompactRev(); rev > 0 && rev != checked {
			s.compactHashCheck(rev)
			checked = rev
		}
	}
}

func (s *Server) compactHashCheck(compactRev int64) {
	id := fmt.Sprintf("%x", s.id)
	s.log.Info("starting compact hash check", "local-member-id", id, "timeout", s.cfg.electionTimeout()*5)
	hash, _, _, localCompact, err := s.kv.HashKV(compactRev)
	if err != nil {
		s.log.Warn("failed to hash the compacted revision", "compact-revision", compactRev, "error", err.Error())
		return
	}
	byHash := map[uint32][]uint64{hash: {s.id}}
	peers := 0
	for _, m := range s.mem.List() {
		if m.ID == s.id || m.IsLearner {
			continue
		}
		peers++
		var resp *pb.HashKVResponse
		reason := "no response"
		for _, u := range m.PeerURLs {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.electionTimeout()*5)
			r, err := s.peerHashKV(ctx, u, compactRev)
			cancel()
			if err == nil {
				resp = r
				break
			}
			reason = err.Error()
		}
		if resp != nil && resp.CompactRevision != localCompact {
			reason = fmt.Sprintf("the peer's CompactRevision %d doesn't match leader's CompactRevision %d", resp.CompactRevision, localCompact)
			resp = nil
		}
		if resp == nil {
			s.log.Warn("Skipped peer's hash", "leader-id", id, "peer-id", fmt.Sprintf("%x", m.ID), "reason", reason)
			continue
		}
		byHash[resp.Hash] = append(byHash[resp.Hash], m.ID)
	}
	if len(byHash) > 1 {
		quorum := (peers+1)/2 + 1
		var majority uint32
		found := false
		for h, ids := range byHash {
			if len(ids) >= quorum {
				majority, found = h, true
			}
		}
		for h, ids := range byHash {
			if found && h == majority {
				continue
			}
			s.log.Error("Detected compaction hash mismatch", "leader-id", id, "leader-compact-revision", localCompact,
				"leader-hash", hash, "peer-hash", h, "peer-ids", fmt.Sprint(hexIDs(ids)), "quorum-exist", found)
			if !found {
				continue
			}
			for _, mid := range ids {
				s.raiseCorrupt(mid)
			}
		}
		if !found {
			s.raiseCorrupt(0) // nobody can be blamed: the whole cluster is suspect, as upstream
		}
	}
	s.log.Info("finished compaction hash check", "number-of-hashes-checked", 1)
}

func hexIDs(ids []uint64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%x", id)
	}
	return out
}

// raiseCorrupt proposes the CORRUPT alarm for a member (0: the cluster). At 3.5 the alarm
// names no member, as upstream 3.5's checks raise it (which member's data is corrupt was left
// to 3.6's quorum comparison).
func (s *Server) raiseCorrupt(id uint64) {
	if s.cfg.Level.Less(version.V3_6) {
		id = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.electionTimeout()*5)
	defer cancel()
	if _, err := s.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: id, Alarm: pb.AlarmType_CORRUPT}); err != nil {
		s.log.Error("failed to raise CORRUPT alarm", "member-id", fmt.Sprintf("%x", id), "error", err.Error())
	}
}
