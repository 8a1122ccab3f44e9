package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Upstream's request and response headers.
const (
	HeaderClusterID     = "X-Etcd-Cluster-ID"
	HeaderFrom          = "X-Server-From"
	HeaderTo            = "X-Raft-To"
	HeaderServerVersion = "X-Server-Version"
	HeaderMinCluster    = "X-Min-Cluster-Version"
	HeaderPeerURLs      = "X-PeerURLs"
	// HeaderRefusal is ours: why a request was refused, beyond upstream's one-line body.
	HeaderRefusal = "X-Etcdx-Refusal"
)

// Upstream's paths on the peer listener.
const (
	RaftPath         = "/raft"
	StreamPrefix     = "/raft/stream"
	SnapshotPath     = "/raft/snapshot"
	ProbingPath      = "/raft/probing"
	streamBufSize    = 4096
	recvBufSize      = 4096
	maxPendingProps  = 4096
	pipelineBufSize  = 64
	connsPerPipeline = 4
)

// ErrMemberRemoved is what Raft.Process returns for a message from a removed member; the sender
// is answered 403, as upstream answers.
var ErrMemberRemoved = errors.New("cannot process message from removed member")

// Raft is the member side the transport delivers to and reports back to.
type Raft interface {
	Process(ctx context.Context, m raftpb.Message) error
	IsIDRemoved(id uint64) bool
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
	// ReceiveSnapshotDB stores the database that accompanies a snapshot message.
	ReceiveSnapshotDB(index uint64, r io.Reader) error
	// CheckPeerVersion refuses a peer whose announced versions cannot run in this cluster.
	CheckPeerVersion(serverVersion, minClusterVersion string) error
}

// Config identifies this member in requests.
type Config struct {
	ID, ClusterID     uint64
	ServerVersion     string
	MinClusterVersion string
	// URLs are this member's advertised peer URLs (sent in X-PeerURLs).
	URLs   []string
	Raft   Raft
	Logger *slog.Logger
	// DialTimeout bounds connecting to a peer.
	DialTimeout time.Duration
	// TLS, when set, is used to dial https peers.
	TLS *tls.Config
	// LocalAddr, when set, is the IP peer connections leave from.
	LocalAddr string
	// WriteTimeout bounds each write on a stream (--raft-write-timeout; 0: upstream's 5 s);
	// link heartbeats go out every third of ReadTimeout (--raft-read-timeout), so a stream
	// whose peer went away fails its next write. Streams this member reads have no read
	// deadline, as upstream's in effect (newStreamRoundTripper).
	ReadTimeout, WriteTimeout time.Duration
	// OnRemoved is called (once) when a peer says this member was removed from the cluster.
	OnRemoved func()
}

// Transport sends to and receives from peers.
type Transport struct {
	cfg Config
	log *slog.Logger
	// pipelineRT carries single requests; streamRT the streams this member opens.
	pipelineRT, streamRT http.RoundTripper
	m                    *metrics

	mu       sync.RWMutex
	peers    map[uint64]*peer
	stopc    chan struct{}
	wg       sync.WaitGroup
	removed  sync.Once
	refusals refusalLog
}

// New returns a transport with no peers.
func New(cfg Config) *Transport {
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = DefaultConnReadTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultConnWriteTimeout
	}
	return &Transport{cfg: cfg, log: cfg.Logger, peers: map[uint64]*peer{}, stopc: make(chan struct{}), m: newMetrics(),
		pipelineRT: NewRoundTripper(cfg.DialTimeout, cfg.TLS, cfg.LocalAddr),
		streamRT:   newStreamRoundTripper(cfg.DialTimeout, cfg.TLS, cfg.LocalAddr)}
}

// SetClusterID updates the cluster ID used in requests (known only after bootstrap).
func (t *Transport) SetClusterID(cid uint64) {
	t.mu.Lock()
	t.cfg.ClusterID = cid
	t.mu.Unlock()
}

func (t *Transport) clusterID() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.cfg.ClusterID
}

// AddPeer starts talking to a peer (no-op for this member; a known peer gets the new URLs).
func (t *Transport) AddPeer(id uint64, urls []string) {
	if id == t.cfg.ID || len(urls) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.stopc:
		return
	default:
	}
	if p, ok := t.peers[id]; ok {
		p.setURLs(urls)
		return
	}
	t.peers[id] = startPeer(t, id, urls)
	t.log.Info("added remote peer", "local-member-id", hexID(t.cfg.ID), "remote-peer-id", hexID(id), "remote-peer-urls", urls)
}

// RemovePeer stops talking to a peer.
func (t *Transport) RemovePeer(id uint64) {
	t.mu.Lock()
	p, ok := t.peers[id]
	delete(t.peers, id)
	t.mu.Unlock()
	if ok {
		p.stop()
		t.log.Info("removed remote peer", "local-member-id", hexID(t.cfg.ID), "removed-remote-peer-id", hexID(id))
	}
}

func (t *Transport) peer(id uint64) *peer {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.peers[id]
}

// Send hands messages to their peers; a full queue drops the message and tells raft the peer
// is unreachable (raft retries on its own schedule).
func (t *Transport) Send(msgs []raftpb.Message) {
	for _, m := range msgs {
		if m.To == 0 {
			continue
		}
		p := t.peer(m.To)
		if p == nil {
			continue
		}
		if m.Type == raftpb.MsgSnap {
			// Snapshots need their database attached: the member sends them with SendSnapshot.
			t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
			continue
		}
		p.send(m)
	}
}

// Stop ends every stream and request.
func (t *Transport) Stop() {
	t.mu.Lock()
	select {
	case <-t.stopc:
	default:
		close(t.stopc)
	}
	peers := t.peers
	t.peers = map[uint64]*peer{}
	t.mu.Unlock()
	for _, p := range peers {
		p.stop()
	}
	t.wg.Wait()
	for _, rt := range []http.RoundTripper{t.pipelineRT, t.streamRT} {
		if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}

// ActiveSince is since when the peer has been reachable (zero: it is not).
func (t *Transport) ActiveSince(id uint64) time.Time {
	if p := t.peer(id); p != nil {
		return p.status.activeSince()
	}
	return time.Time{}
}

// ActivePeers is how many peers are reachable now.
func (t *Transport) ActivePeers() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for _, p := range t.peers {
		if !p.status.activeSince().IsZero() {
			n++
		}
	}
	return n
}

// memberRemoved reports, once, that a peer said this member is no longer in the cluster.
func (t *Transport) memberRemoved(by uint64) {
	t.removed.Do(func() {
		t.log.Error("the member has been permanently removed from the cluster", "local-member-id", hexID(t.cfg.ID), "reported-by", hexID(by))
		if t.cfg.OnRemoved != nil {
			go t.cfg.OnRemoved()
		}
	})
}

// newRequest builds a request to a peer with upstream's headers.
func (t *Transport) newRequest(ctx context.Context, method, url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set(HeaderFrom, hexID(t.cfg.ID))
	req.Header.Set(HeaderServerVersion, t.cfg.ServerVersion)
	req.Header.Set(HeaderMinCluster, t.cfg.MinClusterVersion)
	req.Header.Set(HeaderClusterID, hexID(t.clusterID()))
	if len(t.cfg.URLs) > 0 {
		req.Header.Set(HeaderPeerURLs, strings.Join(t.cfg.URLs, ","))
	}
	return req, nil
}

// postResponseError reads a peer's answer to a POST the way upstream's members do.
func (t *Transport) postResponseError(resp *http.Response, to uint64) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	text := strings.TrimSuffix(string(body), "\n")
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil
	case http.StatusPreconditionFailed:
		return refusedError(resp, text)
	case http.StatusForbidden:
		t.memberRemoved(to)
		return errRemoved
	}
	if foreign := notEtcd(resp); foreign != "" {
		return &foreignError{foreign}
	}
	return fmt.Errorf("unexpected http status %s while posting to %q", http.StatusText(resp.StatusCode), resp.Request.URL)
}

var errRemoved = errors.New("the member has been permanently removed from the cluster")

// refusal is a peer's 412: upstream's one-line reason, and ours in a header when the peer is one
// of our members.
type refusal struct {
	text, detail, peerVersion string
}

func (r *refusal) Error() string {
	if r.detail != "" {
		return r.text + ": " + r.detail
	}
	return r.text
}

func refusedError(resp *http.Response, text string) error {
	return &refusal{text: text, detail: resp.Header.Get(HeaderRefusal), peerVersion: resp.Header.Get(HeaderServerVersion)}
}

// foreignError is an answer from something that does not speak etcd's peer protocol.
type foreignError struct{ what string }

func (e *foreignError) Error() string {
	return "the peer does not speak etcd's peer protocol: " + e.what
}

// notEtcd says why an answer cannot be from an etcd member (empty: it can). Every etcd peer
// handler sets the cluster ID header before anything else.
func notEtcd(resp *http.Response) string {
	if resp.Header.Get(HeaderClusterID) != "" {
		return ""
	}
	if server := resp.Header.Get("Server"); server != "" {
		return fmt.Sprintf("%s answered by %q without etcd's headers", resp.Status, server)
	}
	return fmt.Sprintf("%s without etcd's headers", resp.Status)
}
