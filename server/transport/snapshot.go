package transport

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// SendSnapshot posts a snapshot message followed by the database in db to its recipient, on a
// request of its own so a large transfer never delays heartbeats, and tells raft how it went.
// It closes db.
func (t *Transport) SendSnapshot(m raftpb.Message, db io.ReadCloser) {
	defer db.Close()
	to, start := hexID(m.To), time.Now()
	p := t.peer(m.To)
	if p == nil {
		t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	t.m.snapSendInflight.WithLabelValues(to).Inc()
	defer t.m.snapSendInflight.WithLabelValues(to).Dec()
	err := t.postSnapshot(p, m, db)
	if err != nil {
		t.log.Warn("failed to send database snapshot", "remote-peer-id", to, "snapshot-index", m.Snapshot.Metadata.Index, "error", err)
		p.reportRefusal(err)
		p.status.deactivate("snapshot", err)
		t.m.snapSendFail.WithLabelValues(to).Inc()
		t.m.sentFailures.WithLabelValues(to).Inc()
		p.snapshotStatus(false)
		return
	}
	p.status.activate()
	t.log.Info("sent database snapshot", "remote-peer-id", to, "snapshot-index", m.Snapshot.Metadata.Index, "took", time.Since(start))
	t.m.snapSendOK.WithLabelValues(to).Inc()
	t.m.snapSendTime.WithLabelValues(to).Observe(time.Since(start).Seconds())
	p.snapshotStatus(true)
}

func (t *Transport) postSnapshot(p *peer, m raftpb.Message, db io.Reader) error {
	to := hexID(m.To)
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(countingWriter{pw, t.m.sentBytes.WithLabelValues(to)}, 256<<10)
		err := (&messageEncoder{pieces{w: bw}}).encode(&m)
		if err == nil {
			_, err = io.Copy(bw, db)
		}
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	req, err := t.newRequest(p.ctx, http.MethodPost, p.pickURL()+SnapshotPath, pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	t.log.Info("sending database snapshot", "remote-peer-id", to, "snapshot-index", m.Snapshot.Metadata.Index)
	resp, err := t.pipelineRT.RoundTrip(req)
	if err != nil {
		p.unreachable()
		return err
	}
	defer resp.Body.Close()
	return t.postResponseError(resp, p.id)
}

// serveSnapshot answers POST /raft/snapshot: a snapshot message, then the database.
func (t *Transport) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !t.admitPeer(w, r, http.MethodPost, false) {
		return
	}
	br := bufio.NewReaderSize(r.Body, 256<<10)
	m, err := (&messageDecoder{r: br, limit: maxSnapshotMessageBytes}).decode()
	from := hexID(m.From)
	if err != nil {
		t.log.Warn("failed to decode Raft message", "local-member-id", hexID(t.cfg.ID), "remote-snapshot-sender-id", from, "error", err)
		http.Error(w, fmt.Sprintf("failed to decode raft message (%v)", err), http.StatusBadRequest)
		t.m.recvFailures.WithLabelValues(r.RemoteAddr).Inc()
		t.m.snapRecvFail.WithLabelValues(from).Inc()
		return
	}
	if m.Type != raftpb.MsgSnap || m.Snapshot == nil {
		t.log.Warn("unexpected Raft message type", "local-member-id", hexID(t.cfg.ID), "remote-snapshot-sender-id", from, "message-type", m.Type.String())
		http.Error(w, "wrong raft message type", http.StatusBadRequest)
		t.m.snapRecvFail.WithLabelValues(from).Inc()
		return
	}
	t.m.snapRecvInflight.WithLabelValues(from).Inc()
	defer t.m.snapRecvInflight.WithLabelValues(from).Dec()
	t.log.Info("receiving database snapshot", "local-member-id", hexID(t.cfg.ID), "remote-snapshot-sender-id", from,
		"incoming-snapshot-index", m.Snapshot.Metadata.Index)
	if err := t.cfg.Raft.ReceiveSnapshotDB(m.Snapshot.Metadata.Index, countingReader{br, t.m.recvBytes.WithLabelValues(from)}); err != nil {
		t.log.Warn("failed to save incoming database snapshot", "local-member-id", hexID(t.cfg.ID), "remote-snapshot-sender-id", from, "error", err)
		http.Error(w, fmt.Sprintf("failed to save KV snapshot (%v)", err), http.StatusInternalServerError)
		t.m.snapRecvFail.WithLabelValues(from).Inc()
		return
	}
	t.log.Info("received and saved database snapshot", "local-member-id", hexID(t.cfg.ID), "remote-snapshot-sender-id", from,
		"incoming-snapshot-index", m.Snapshot.Metadata.Index, "download-took", time.Since(start))
	if err := t.cfg.Raft.Process(r.Context(), m); err != nil {
		t.processError(w, err, from)
		t.m.snapRecvFail.WithLabelValues(from).Inc()
		return
	}
	w.WriteHeader(http.StatusNoContent)
	t.m.snapRecvOK.WithLabelValues(from).Inc()
	t.m.snapRecvTime.WithLabelValues(from).Observe(time.Since(start).Seconds())
}
