package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// Handler serves upstream's raft endpoints of the peer listener.
func (t *Transport) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(RaftPath, t.servePipeline)
	mux.HandleFunc(StreamPrefix+"/", t.serveStream)
	mux.HandleFunc(SnapshotPath, t.serveSnapshot)
	mux.HandleFunc(ProbingPath, serveProbing)
	return mux
}

// refusalLog keeps a refused peer from filling the log: the same refusal of the same peer is
// logged again only after a while (the peer retries every 100 ms).
type refusalLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

var refusalLogEvery = 10 * time.Second

func (l *refusalLog) due(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	if time.Since(l.last[key]) < refusalLogEvery {
		return false
	}
	l.last[key] = time.Now()
	return true
}

// checkCompatibility refuses a request from a member of another cluster or of a version this
// one cannot run with, with upstream's status and text (and the detail in our header).
func (t *Transport) checkCompatibility(w http.ResponseWriter, r *http.Request) bool {
	from := r.Header.Get(HeaderFrom)
	remoteVersion, remoteMin := r.Header.Get(HeaderServerVersion), r.Header.Get(HeaderMinCluster)
	if err := t.cfg.Raft.CheckPeerVersion(remoteVersion, remoteMin); err != nil {
		if t.refusals.due(from + "version" + err.Error()) {
			t.log.Warn("failed version compatibility check", "remote-peer-server-name", from, "remote-peer-server-version", remoteVersion,
				"remote-peer-server-minimum-cluster-version", remoteMin, "local-server-version", t.cfg.ServerVersion,
				"local-server-minimum-cluster-version", t.cfg.MinClusterVersion, "error", err)
		}
		w.Header().Set(HeaderRefusal, err.Error())
		http.Error(w, "incompatible version", http.StatusPreconditionFailed)
		return false
	}
	if got, want := r.Header.Get(HeaderClusterID), hexID(t.clusterID()); got != want {
		if t.refusals.due(from + "cid" + got) {
			t.log.Warn("request cluster ID mismatch", "local-member-id", hexID(t.cfg.ID), "local-member-cluster-id", want,
				"local-member-server-version", t.cfg.ServerVersion, "remote-peer-server-name", from,
				"remote-peer-server-version", remoteVersion, "remote-peer-cluster-id", got)
		}
		w.Header().Set(HeaderRefusal, fmt.Sprintf("this member is in cluster %s, the request is for cluster %s", want, got))
		http.Error(w, "cluster ID mismatch", http.StatusPreconditionFailed)
		return false
	}
	return true
}

// serveStream answers GET /raft/stream/{msgapp,message}/<from>: the peer <from> wants our
// messages of that type; the response stays open and the peer's stream writer fills it.
func (t *Transport) serveStream(w http.ResponseWriter, r *http.Request) {
	if !t.admitPeer(w, r, http.MethodGet, true) {
		return
	}
	var typ streamType
	switch path.Dir(r.URL.Path) {
	case streamMsgAppV2.endpoint():
		typ = streamMsgAppV2
	case streamMessage.endpoint():
		typ = streamMessage
	default:
		http.Error(w, "invalid path", http.StatusNotFound)
		return
	}
	fromStr := path.Base(r.URL.Path)
	from, err := strconv.ParseUint(fromStr, 16, 64)
	if err != nil {
		http.Error(w, "invalid from", http.StatusNotFound)
		return
	}
	if t.cfg.Raft.IsIDRemoved(from) {
		if t.refusals.due(fromStr + "removed") {
			t.log.Warn("rejected stream from remote peer because it was removed", "local-member-id", hexID(t.cfg.ID), "remote-peer-id-stream-handler", fromStr)
		}
		http.Error(w, "removed member", http.StatusGone)
		return
	}
	p := t.peer(from)
	if p == nil {
		if t.refusals.due(fromStr + "unknown") {
			t.log.Warn("failed to find remote peer in cluster", "local-member-id", hexID(t.cfg.ID), "remote-peer-id-stream-handler", fromStr)
		}
		http.Error(w, "error sender not found", http.StatusNotFound)
		return
	}
	if to := r.Header.Get(HeaderTo); to != hexID(t.cfg.ID) {
		if t.refusals.due(fromStr + "to" + to) {
			t.log.Warn("ignored streaming request; ID mismatch", "local-member-id", hexID(t.cfg.ID), "remote-peer-id-header", to,
				"remote-peer-id-from", fromStr)
		}
		w.Header().Set(HeaderRefusal, fmt.Sprintf("this member is %s, the stream is for %s", hexID(t.cfg.ID), to))
		http.Error(w, "to field mismatch", http.StatusPreconditionFailed)
		return
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return
	}
	// The response outlives any server write timeout: the writer sets a deadline per write.
	rc.SetWriteDeadline(time.Time{})
	c := &outgoingConn{bw: bufio.NewWriterSize(w, 64<<10), rc: rc, released: make(chan struct{})}
	writer := p.msgWriter
	if typ == streamMsgAppV2 {
		writer = p.msgAppWriter
	}
	if !writer.attach(c) {
		return
	}
	// Only a failed write ends the stream, as upstream's: a peer that went away is found by
	// the next write (the writer's link heartbeats come often). Going by the request's end
	// instead would give up a stream a proxy in between still holds open (upstream's
	// blackholing tests rely on this member writing into it meanwhile).
	<-c.released
}

// admitPeer is what every raft endpoint does first: refuse another method, name this
// cluster (and, for streams, this server's version) in the answer, and refuse a peer of
// another cluster or an incompatible version (each refusal answered here). It reports
// whether to go on.
func (t *Transport) admitPeer(w http.ResponseWriter, r *http.Request, method string, withVersion bool) bool {
	if r.Method != method {
		w.Header().Set("Allow", method)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return false
	}
	if withVersion {
		w.Header().Set(HeaderServerVersion, t.cfg.ServerVersion)
	}
	w.Header().Set(HeaderClusterID, hexID(t.clusterID()))
	return t.checkCompatibility(w, r)
}

// servePipeline answers POST /raft: one raft message.
func (t *Transport) servePipeline(w http.ResponseWriter, r *http.Request) {
	if !t.admitPeer(w, r, http.MethodPost, false) {
		return
	}
	from := r.Header.Get(HeaderFrom)
	b, err := io.ReadAll(io.LimitReader(r.Body, maxMessageBytes+1))
	if err != nil || len(b) > maxMessageBytes {
		t.log.Warn("failed to read Raft message", "local-member-id", hexID(t.cfg.ID), "error", err)
		http.Error(w, "error reading raft message", http.StatusBadRequest)
		t.m.recvFailures.WithLabelValues(r.RemoteAddr).Inc()
		return
	}
	var m raftpb.Message
	if err := m.Unmarshal(b); err != nil {
		t.log.Warn("failed to unmarshal Raft message", "local-member-id", hexID(t.cfg.ID), "error", err)
		http.Error(w, "error unmarshalling raft message", http.StatusBadRequest)
		t.m.recvFailures.WithLabelValues(r.RemoteAddr).Inc()
		return
	}
	t.m.recvBytes.WithLabelValues(hexID(m.From)).Add(float64(len(b)))
	if err := t.cfg.Raft.Process(r.Context(), m); err != nil {
		t.processError(w, err, from)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// processError answers a message raft would not take: 403 for a removed sender, as upstream.
func (t *Transport) processError(w http.ResponseWriter, err error, from string) {
	if errors.Is(err, ErrMemberRemoved) {
		http.Error(w, ErrMemberRemoved.Error(), http.StatusForbidden)
		return
	}
	t.log.Warn("failed to process Raft message", "local-member-id", hexID(t.cfg.ID), "remote-peer-id", from, "error", err)
	http.Error(w, "error processing raft message", http.StatusInternalServerError)
}

// probing is upstream's answer to a probe: healthy, and this member's clock.
func serveProbing(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"OK":true,"Now":%q}`+"\n", time.Now().Format(time.RFC3339Nano))
}

// hexID is how upstream writes member and cluster IDs in headers, paths and logs.
func hexID(id uint64) string { return strings.ToLower(strconv.FormatUint(id, 16)) }
