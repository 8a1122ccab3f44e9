// Package transport carries raft messages between members over their peer listeners.
//
// Each member keeps one long-lived streaming HTTP POST to every peer and writes length-prefixed
// raftpb.Message frames into it. The request headers are a versioned handshake (cluster ID,
// sender, recipient, server version, the lowest cluster version the sender can run in); the
// receiver refuses a mismatch before reading any message and both sides log the values. Every
// peer has its own goroutine and bounded queue, so a slow or dead peer never holds up the others.
package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Handshake headers.
const (
	HeaderClusterID     = "X-Etcd-Cluster-ID"
	HeaderFrom          = "X-Server-From"
	HeaderTo            = "X-Raft-To"
	HeaderServerVersion = "X-Server-Version"
	HeaderMinCluster    = "X-Min-Cluster-Version"

	// StreamPath is where raft message streams arrive.
	StreamPath = "/raft/stream"
	maxFrame   = 64 << 20
	queueLen   = 4096
)

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

// Config identifies this member in handshakes.
type Config struct {
	ID, ClusterID     uint64
	ServerVersion     string
	MinClusterVersion string
	Raft              Raft
	Logger            *slog.Logger
	// DialTimeout bounds connecting to a peer.
	DialTimeout time.Duration
	// TLS, when set, is used to dial https peers.
	TLS *tls.Config
	// LocalAddr, when set, is the IP peer connections leave from.
	LocalAddr string
	// ReadTimeout ends an incoming stream that brought nothing for that long, and WriteTimeout
	// an outgoing one whose peer took no data for that long (--raft-read-timeout,
	// --raft-write-timeout; 0: upstream's 5 s). Idle streams carry link heartbeats, so only a
	// peer that is gone or frozen trips them.
	ReadTimeout, WriteTimeout time.Duration
}

// Transport sends to and receives from peers.
type Transport struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	m      *metrics

	mu    sync.RWMutex
	peers map[uint64]*peer
	// inbound records since when each peer has had a stream open to us.
	inbound map[uint64]time.Time
	stopc   chan struct{}
	wg      sync.WaitGroup
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
	return &Transport{cfg: cfg, log: cfg.Logger, peers: map[uint64]*peer{}, inbound: map[uint64]time.Time{}, stopc: make(chan struct{}),
		client: &http.Client{Transport: NewRoundTripper(cfg.DialTimeout, cfg.TLS, cfg.LocalAddr)}, m: newMetrics()}
}

// SetClusterID updates the cluster ID used in handshakes (known only after bootstrap).
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

// AddPeer starts streaming to a peer (no-op for this member or a known peer).
func (t *Transport) AddPeer(id uint64, urls []string) {
	if id == t.cfg.ID || len(urls) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.peers[id]; ok {
		p.setURLs(urls)
		return
	}
	p := &peer{t: t, id: id, urls: append([]string(nil), urls...), msgc: make(chan raftpb.Message, queueLen), stopc: make(chan struct{})}
	t.peers[id] = p
	t.wg.Add(2)
	go func() {
		defer t.wg.Done()
		p.run()
	}()
	go func() {
		defer t.wg.Done()
		p.probe()
	}()
	t.log.Info("added peer", "peer-id", fmt.Sprintf("%x", id), "peer-urls", urls)
}

// RemovePeer stops streaming to a peer.
func (t *Transport) RemovePeer(id uint64) {
	t.mu.Lock()
	p, ok := t.peers[id]
	delete(t.peers, id)
	t.mu.Unlock()
	if ok {
		close(p.stopc)
		t.log.Info("removed peer", "peer-id", fmt.Sprintf("%x", id))
	}
}

// Send queues messages for their peers; a full queue drops the message and tells raft the peer
// is unreachable (raft retries on its own schedule).
func (t *Transport) Send(msgs []raftpb.Message) {
	for _, m := range msgs {
		if m.To == 0 {
			continue
		}
		t.mu.RLock()
		p := t.peers[m.To]
		t.mu.RUnlock()
		if p == nil {
			continue
		}
		if m.Type == raftpb.MsgSnap {
			// Snapshots need their database attached: the member sends them with SendSnapshot.
			t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
			continue
		}
		select {
		case p.msgc <- m:
		default:
			t.m.sentFailures.WithLabelValues(hexID(m.To)).Inc()
			t.cfg.Raft.ReportUnreachable(m.To)
		}
	}
}

// Stop ends every stream.
func (t *Transport) Stop() {
	t.mu.Lock()
	select {
	case <-t.stopc:
	default:
		close(t.stopc)
	}
	for id, p := range t.peers {
		close(p.stopc)
		delete(t.peers, id)
	}
	t.mu.Unlock()
	t.wg.Wait()
	t.client.CloseIdleConnections()
}

// ActiveSince is when the peer's current stream to this member opened (zero: none open).
func (t *Transport) ActiveSince(id uint64) time.Time {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.inbound[id]
}

// ActivePeers is how many peers have a stream open to this member.
func (t *Transport) ActivePeers() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.inbound)
}

// Handler serves incoming streams.
func (t *Transport) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(StreamPath, t.serveStream)
	mux.HandleFunc(SnapshotPath, t.serveSnapshot)
	mux.HandleFunc(ProbingPath, serveProbing)
	return mux
}

// refusal explains a failed handshake; the status tells the sender whether to retry.
type refusal struct {
	status int
	reason string
}

func (t *Transport) checkHandshake(h http.Header) *refusal {
	parse := func(name string) (uint64, error) { return strconv.ParseUint(h.Get(name), 16, 64) }
	cid, err := parse(HeaderClusterID)
	if err != nil {
		return &refusal{http.StatusBadRequest, "missing or malformed " + HeaderClusterID}
	}
	from, err := parse(HeaderFrom)
	if err != nil {
		return &refusal{http.StatusBadRequest, "missing or malformed " + HeaderFrom}
	}
	to, err := parse(HeaderTo)
	if err != nil {
		return &refusal{http.StatusBadRequest, "missing or malformed " + HeaderTo}
	}
	if local := t.clusterID(); cid != local {
		return &refusal{http.StatusPreconditionFailed, fmt.Sprintf("cluster ID mismatch: local %x, remote %x", local, cid)}
	}
	if to != t.cfg.ID {
		return &refusal{http.StatusPreconditionFailed, fmt.Sprintf("member ID mismatch: this member is %x, the stream is for %x", t.cfg.ID, to)}
	}
	if t.cfg.Raft.IsIDRemoved(from) {
		return &refusal{http.StatusGone, fmt.Sprintf("member %x was removed from the cluster", from)}
	}
	if err := t.cfg.Raft.CheckPeerVersion(h.Get(HeaderServerVersion), h.Get(HeaderMinCluster)); err != nil {
		return &refusal{http.StatusPreconditionFailed, "incompatible version: " + err.Error()}
	}
	return nil
}

func (t *Transport) serveStream(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if ref := t.checkHandshake(r.Header); ref != nil {
		t.log.Warn("rejected stream from remote peer", "reason", ref.reason, "remote-peer-id", r.Header.Get(HeaderFrom),
			"remote-version", r.Header.Get(HeaderServerVersion), "local-member-id", fmt.Sprintf("%x", t.cfg.ID),
			"local-version", t.cfg.ServerVersion)
		// Flush now: the sender's body never ends, and the server would otherwise try to drain
		// it before answering.
		w.Header().Set("Connection", "close")
		http.Error(w, ref.reason, ref.status)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return
	}
	from := r.Header.Get(HeaderFrom)
	fromID, _ := strconv.ParseUint(from, 16, 64)
	since := time.Now()
	t.mu.Lock()
	t.inbound[fromID] = since
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		if t.inbound[fromID] == since {
			delete(t.inbound, fromID)
		}
		t.mu.Unlock()
	}()
	t.log.Debug("accepted stream", "remote-peer-id", from, "remote-version", r.Header.Get(HeaderServerVersion))
	br := bufio.NewReaderSize(countingReader{r.Body, t.m.recvBytes.WithLabelValues(from)}, 64<<10)
	ctx := r.Context()
	rc := http.NewResponseController(w)
	for {
		// A frame (a message or a link heartbeat) is due within the read timeout.
		rc.SetReadDeadline(time.Now().Add(t.cfg.ReadTimeout))
		m, err := readFrame(br)
		if errors.Is(err, errHeartbeat) {
			continue
		}
		if err != nil {
			if timedOut := errors.Is(err, os.ErrDeadlineExceeded); timedOut || (!errors.Is(err, io.EOF) && ctx.Err() == nil) {
				t.m.recvFailures.WithLabelValues(from).Inc()
				if timedOut {
					t.log.Warn("lost TCP streaming connection with remote peer", "remote-peer-id", from,
						"error", fmt.Sprintf("no message or heartbeat within the raft read timeout (%v)", t.cfg.ReadTimeout))
				} else {
					t.log.Debug("stream from peer ended", "remote-peer-id", from, "error", err)
				}
			}
			return
		}
		if err := t.cfg.Raft.Process(ctx, m); err != nil {
			t.m.recvFailures.WithLabelValues(from).Inc()
			t.log.Warn("failed to process raft message", "remote-peer-id", from, "error", err)
			return
		}
	}
}

func writeFrame(w io.Writer, m *raftpb.Message) error {
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// errHeartbeat is readFrame's answer to a link heartbeat: an empty frame an idle stream sends
// so the receiving side's read timeout measures the peer, not the traffic.
var errHeartbeat = errors.New("link heartbeat")

func readFrame(r io.Reader) (raftpb.Message, error) {
	var m raftpb.Message
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return m, err
	}
	n := binary.BigEndian.Uint64(hdr[:])
	if n == 0 {
		return m, errHeartbeat
	}
	if n > maxFrame {
		return m, fmt.Errorf("raft message of %d bytes exceeds the %d byte limit", n, maxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return m, err
	}
	return m, m.Unmarshal(b)
}
