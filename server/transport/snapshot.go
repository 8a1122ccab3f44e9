package transport

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// SnapshotPath is where a snapshot message and its database arrive, on a stream of their own so
// a large transfer never delays heartbeats.
const SnapshotPath = "/raft/snapshot"

// SendSnapshot streams a snapshot message followed by the database in db to its recipient and
// tells raft how it went. It closes db.
func (t *Transport) SendSnapshot(m raftpb.Message, db io.ReadCloser) {
	defer db.Close()
	to, start := hexID(m.To), time.Now()
	t.m.snapSendInflight.WithLabelValues(to).Inc()
	defer t.m.snapSendInflight.WithLabelValues(to).Dec()
	ok := false
	defer func() {
		if ok {
			t.m.snapSendOK.WithLabelValues(to).Inc()
			t.m.snapSendTime.WithLabelValues(to).Observe(time.Since(start).Seconds())
		} else {
			t.m.snapSendFail.WithLabelValues(to).Inc()
		}
	}()
	t.mu.RLock()
	p := t.peers[m.To]
	t.mu.RUnlock()
	if p == nil {
		t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(countingWriter{pw, t.m.sentBytes.WithLabelValues(to)}, 256<<10)
		err := writeFrame(bw, &m)
		if err == nil {
			_, err = io.Copy(bw, db)
		}
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest(http.MethodPost, p.pickURL()+SnapshotPath, pr)
	if err != nil {
		pr.CloseWithError(err)
		t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	p.setHandshake(req)
	resp, err := t.client.Do(req)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		t.log.Warn("failed to send database snapshot", "peer-id", fmt.Sprintf("%x", m.To), "error", err)
		t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.log.Warn("peer refused database snapshot", "peer-id", fmt.Sprintf("%x", m.To), "status", resp.Status, "reason", strings.TrimSpace(string(body)))
		t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	t.log.Info("sent database snapshot", "peer-id", fmt.Sprintf("%x", m.To), "index", m.Snapshot.Metadata.Index)
	ok = true
	t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFinish)
}

func (t *Transport) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if ref := t.checkHandshake(r.Header); ref != nil {
		t.log.Warn("rejected snapshot from remote peer", "reason", ref.reason, "remote-peer-id", r.Header.Get(HeaderFrom))
		w.Header().Set("Connection", "close")
		http.Error(w, ref.reason, ref.status)
		return
	}
	from, start := r.Header.Get(HeaderFrom), time.Now()
	t.m.snapRecvInflight.WithLabelValues(from).Inc()
	defer t.m.snapRecvInflight.WithLabelValues(from).Dec()
	ok := false
	defer func() {
		if ok {
			t.m.snapRecvOK.WithLabelValues(from).Inc()
			t.m.snapRecvTime.WithLabelValues(from).Observe(time.Since(start).Seconds())
		} else {
			t.m.snapRecvFail.WithLabelValues(from).Inc()
		}
	}()
	br := bufio.NewReaderSize(countingReader{r.Body, t.m.recvBytes.WithLabelValues(from)}, 256<<10)
	m, err := readFrame(br)
	if err != nil || m.Type != raftpb.MsgSnap || m.Snapshot == nil {
		http.Error(w, fmt.Sprintf("malformed snapshot message: %v", err), http.StatusBadRequest)
		return
	}
	if err := t.cfg.Raft.ReceiveSnapshotDB(m.Snapshot.Metadata.Index, br); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if err := t.cfg.Raft.Process(r.Context(), m); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ok = true
	w.WriteHeader(http.StatusNoContent)
}
