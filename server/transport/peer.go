package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// peer is everything this member runs for one remote member: a writer for each stream type (fed
// by the streams the peer opens to us), a reader for each (the streams we open to the peer), the
// pipeline, the prober, and the goroutines that hand received messages to raft.
type peer struct {
	t  *Transport
	id uint64

	status *peerStatus

	mu   sync.Mutex
	urls []string
	next int

	msgAppWriter, msgWriter *streamWriter
	msgAppReader, msgReader *streamReader
	pipeline                *pipeline

	recvc, propc chan raftpb.Message
	ctx          context.Context
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	// lastDrop is when a dropped message was last logged (unix ns); Send is called from the raft
	// loop and from the goroutines that answer peers' messages.
	lastDrop atomic.Int64
}

func startPeer(t *Transport, id uint64, urls []string) *peer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &peer{t: t, id: id, urls: append([]string(nil), urls...), ctx: ctx, cancel: cancel,
		status: newPeerStatus(t, id),
		recvc:  make(chan raftpb.Message, recvBufSize), propc: make(chan raftpb.Message, maxPendingProps)}
	p.msgAppWriter = newStreamWriter(p, streamMsgAppV2)
	p.msgWriter = newStreamWriter(p, streamMessage)
	p.msgAppReader = &streamReader{p: p, typ: streamMsgAppV2}
	p.msgReader = &streamReader{p: p, typ: streamMessage}
	p.pipeline = &pipeline{p: p, msgc: make(chan raftpb.Message, pipelineBufSize)}
	p.goRun(p.msgAppWriter.run)
	p.goRun(p.msgWriter.run)
	p.goRun(p.msgAppReader.run)
	p.goRun(p.msgReader.run)
	for i := 0; i < connsPerPipeline; i++ {
		p.goRun(p.pipeline.run)
	}
	p.goRun(func() { p.deliver(p.recvc) })
	p.goRun(func() { p.deliver(p.propc) })
	p.goRun(p.probe)
	return p
}

func (p *peer) goRun(f func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// stop ends the peer's goroutines and connections.
func (p *peer) stop() {
	p.cancel()
	p.wg.Wait()
	p.status.deactivate("transport", errors.New("peer removed"))
}

func (p *peer) setURLs(urls []string) {
	p.mu.Lock()
	p.urls = append([]string(nil), urls...)
	p.mu.Unlock()
}

// pickURL takes the peer's URLs in turn, so a failing one is not retried forever.
func (p *peer) pickURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.urls[p.next%len(p.urls)]
	return strings.TrimRight(u, "/")
}

// unreachable moves on to the peer's next URL.
func (p *peer) unreachable() {
	p.mu.Lock()
	p.next++
	p.mu.Unlock()
}

// send queues m on a stream if one is up (appends on the msgapp stream), otherwise on the
// pipeline, as upstream picks.
func (p *peer) send(m raftpb.Message) {
	var msgc chan<- raftpb.Message
	switch {
	case m.Type == raftpb.MsgApp && p.msgAppWriter.isWorking():
		msgc = p.msgAppWriter.msgc
	case p.msgWriter.isWorking():
		msgc = p.msgWriter.msgc
	default:
		msgc = p.pipeline.msgc
	}
	select {
	case msgc <- m:
	default:
		p.t.cfg.Raft.ReportUnreachable(m.To)
		p.t.m.sentFailures.WithLabelValues(hexID(m.To)).Inc()
		if now := time.Now().UnixNano(); now-p.lastDrop.Load() > int64(time.Second) {
			p.lastDrop.Store(now)
			p.t.log.Warn("dropped internal Raft message since sending buffer is full", "message-type", m.Type.String(),
				"local-member-id", hexID(p.t.cfg.ID), "remote-peer-id", hexID(p.id), "remote-peer-active", p.status.isActive())
		}
	}
}

// deliver hands received messages to raft, one at a time, until the peer stops.
func (p *peer) deliver(c <-chan raftpb.Message) {
	for {
		select {
		case m := <-c:
			if err := p.t.cfg.Raft.Process(p.ctx, m); err != nil && p.ctx.Err() == nil {
				p.t.log.Warn("failed to process Raft message", "remote-peer-id", hexID(p.id), "error", err)
			}
		case <-p.ctx.Done():
			return
		}
	}
}

// receive queues a message read from one of the peer's streams for raft; proposals have their
// own queue so a burst of them cannot hold up the rest.
func (p *peer) receive(m raftpb.Message) {
	c := p.recvc
	if m.Type == raftpb.MsgProp {
		c = p.propc
	}
	select {
	case c <- m:
	default:
		p.t.m.recvFailures.WithLabelValues(hexID(m.From)).Inc()
		p.t.log.Warn("dropped internal Raft message since receiving buffer is full (overloaded network)",
			"message-type", m.Type.String(), "local-member-id", hexID(p.t.cfg.ID), "from", hexID(m.From), "remote-peer-id", hexID(p.id))
	}
}

// peerStatus is whether the peer is reachable, since when, and the last failure (logged when it
// changes, so a peer that stays down does not fill the log).
type peerStatus struct {
	t  *Transport
	id uint64

	mu          sync.Mutex
	since       time.Time
	lastFailure string
	// lastReport is the last refusal or foreign answer logged.
	lastReport string
}

func newPeerStatus(t *Transport, id uint64) *peerStatus { return &peerStatus{t: t, id: id} }

func (s *peerStatus) activate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.since.IsZero() {
		return
	}
	s.t.log.Info("peer became active", "peer-id", hexID(s.id))
	s.since = time.Now()
	s.lastFailure = ""
	s.t.m.activeGauge.WithLabelValues(hexID(s.t.cfg.ID), hexID(s.id)).Inc()
}

// deactivate records a failure on one of the peer's channels (a stream, the pipeline).
func (s *peerStatus) deactivate(source string, err error) {
	failure := err.Error()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.since.IsZero() {
		s.t.log.Warn("peer became inactive (message send to peer failed)", "peer-id", hexID(s.id), "error", source+": "+failure)
		s.since = time.Time{}
		s.lastFailure = failure
		s.t.m.activeGauge.WithLabelValues(hexID(s.t.cfg.ID), hexID(s.id)).Dec()
		s.t.m.disconnected.WithLabelValues(hexID(s.t.cfg.ID), hexID(s.id)).Inc()
		return
	}
	if failure != s.lastFailure {
		s.lastFailure = failure
		s.t.log.Warn("peer is unreachable", "peer-id", hexID(s.id), "error", failure, "via", source)
	}
}

func (s *peerStatus) isActive() bool { return !s.activeSince().IsZero() }

func (s *peerStatus) activeSince() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.since
}

// pipeline sends messages as single POSTs when no stream is up, on a few connections at once.
type pipeline struct {
	p    *peer
	msgc chan raftpb.Message
}

func (pl *pipeline) run() {
	p := pl.p
	for {
		select {
		case m := <-pl.msgc:
			if err := pl.post(m); err != nil {
				p.status.deactivate("pipeline", err)
				p.t.cfg.Raft.ReportUnreachable(m.To)
				p.t.m.sentFailures.WithLabelValues(hexID(m.To)).Inc()
				continue
			}
			p.status.activate()
		case <-p.ctx.Done():
			return
		}
	}
}

func (pl *pipeline) post(m raftpb.Message) error {
	p := pl.p
	b, err := m.Marshal()
	if err != nil {
		return fmt.Errorf("marshal raft message: %w", err)
	}
	req, err := p.t.newRequest(p.ctx, "POST", p.pickURL()+RaftPath, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/protobuf")
	resp, err := p.t.pipelineRT.RoundTrip(req)
	if err != nil {
		p.unreachable()
		return err
	}
	defer resp.Body.Close()
	if err := p.t.postResponseError(resp, p.id); err != nil {
		p.unreachable()
		p.reportRefusal(err)
		return err
	}
	p.t.m.sentBytes.WithLabelValues(hexID(p.id)).Add(float64(len(b)))
	return nil
}

// reportRefusal logs why the peer refused us, with both versions, when the reason is new.
func (p *peer) reportRefusal(err error) {
	switch e := err.(type) {
	case *refusal:
		p.status.logOnce("refused: "+e.Error(), func() {
			p.t.log.Warn("request sent was ignored by remote peer", "remote-peer-id", hexID(p.id), "reason", e.Error(),
				"remote-peer-version", e.peerVersion, "local-member-id", hexID(p.t.cfg.ID), "local-version", p.t.cfg.ServerVersion)
		})
	case *foreignError:
		p.status.logOnce("foreign: "+e.Error(), func() {
			p.t.log.Error("peer URL does not answer as an etcd member", "remote-peer-id", hexID(p.id), "remote-peer-url", p.pickURL(),
				"error", e.Error(), "local-member-id", hexID(p.t.cfg.ID))
		})
	}
}

// logOnce runs log when key differs from the last reason logged for this peer.
func (s *peerStatus) logOnce(key string, log func()) {
	s.mu.Lock()
	if s.lastReport == key {
		s.mu.Unlock()
		return
	}
	s.lastReport = key
	s.mu.Unlock()
	log()
}

// snapshotStatus reports a snapshot's outcome to raft.
func (p *peer) snapshotStatus(ok bool) {
	st := raft.SnapshotFinish
	if !ok {
		st = raft.SnapshotFailure
		p.t.cfg.Raft.ReportUnreachable(p.id)
	}
	p.t.cfg.Raft.ReportSnapshot(p.id, st)
}
