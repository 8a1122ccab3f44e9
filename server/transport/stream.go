package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/failpoint"
)

type streamType int

const (
	streamMsgAppV2 streamType = iota
	streamMessage
)

// endpoint is the path prefix a peer opens the stream at (the opener's ID follows).
func (t streamType) endpoint() string {
	if t == streamMsgAppV2 {
		return StreamPrefix + "/msgapp"
	}
	return StreamPrefix + "/message"
}

// String is upstream's name for the stream type, as its log lines show it.
func (t streamType) String() string {
	if t == streamMsgAppV2 {
		return "stream MsgApp v2"
	}
	return "stream Message"
}

func (t streamType) encoder(w bufferedWriter) encoder {
	if t == streamMsgAppV2 {
		return &msgAppV2Encoder{pieces: pieces{w: w}}
	}
	return &messageEncoder{pieces{w: w}}
}

// outgoingConn is the response of a stream a peer opened to us, which we write messages into.
// The handler that owns the response waits until the writer releases it.
type outgoingConn struct {
	bw       *bufio.Writer
	rc       *http.ResponseController
	released chan struct{} // the writer no longer touches the response
	once     sync.Once
}

func (c *outgoingConn) release() { c.once.Do(func() { close(c.released) }) }

// streamWriter sends one stream type's messages to a peer over the stream the peer opened.
type streamWriter struct {
	p     *peer
	typ   streamType
	msgc  chan raftpb.Message
	connc chan *outgoingConn

	// sent is the peer's sent-bytes counter, looked up once: every flush adds to it.
	sent prometheus.Counter

	mu      sync.Mutex
	working bool
}

func newStreamWriter(p *peer, typ streamType) *streamWriter {
	return &streamWriter{p: p, typ: typ, msgc: make(chan raftpb.Message, streamBufSize), connc: make(chan *outgoingConn),
		sent: p.t.m.sentBytes.WithLabelValues(hexID(p.id))}
}

func (sw *streamWriter) isWorking() bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.working
}

func (sw *streamWriter) setWorking(w bool) {
	sw.mu.Lock()
	sw.working = w
	sw.mu.Unlock()
}

// attach hands a newly opened stream to the writer; false if the peer is being stopped.
func (sw *streamWriter) attach(c *outgoingConn) bool {
	select {
	case sw.connc <- c:
		return true
	case <-sw.p.ctx.Done():
		return false
	}
}

func (sw *streamWriter) run() {
	p, t := sw.p, sw.p.t
	var (
		conn *outgoingConn
		enc  encoder
	)
	heartbeat := time.NewTicker(t.cfg.ReadTimeout / 3)
	defer heartbeat.Stop()
	drop := func(why string) {
		if conn == nil {
			return
		}
		conn.release()
		conn, enc = nil, nil
		sw.setWorking(false)
		// Messages queued for the lost stream are gone: raft is told the peer is unreachable.
		for pending := true; pending; {
			select {
			case <-sw.msgc:
			default:
				pending = false
			}
		}
		t.cfg.Raft.ReportUnreachable(p.id)
		if why != "" {
			p.status.deactivate(sw.typ.String()+" writer", errors.New(why))
			t.m.sentFailures.WithLabelValues(hexID(p.id)).Inc()
			t.log.Warn("lost TCP streaming connection with remote peer", "stream-writer-type", sw.typ.String(),
				"local-member-id", hexID(t.cfg.ID), "remote-peer-id", hexID(p.id), "error", why)
		}
	}
	defer drop("")
	for {
		select {
		case <-heartbeat.C:
			if conn == nil {
				continue
			}
			if err := sw.write(conn, enc, &linkHeartbeat, 0, t.cfg.WriteTimeout); err != nil {
				drop(err.Error())
			}
		case m := <-sw.msgc:
			if conn == nil {
				t.cfg.Raft.ReportUnreachable(m.To)
				continue
			}
			if err := sw.write(conn, enc, &m, len(sw.msgc), t.cfg.WriteTimeout); err != nil {
				drop(err.Error())
			}
		case c := <-sw.connc:
			replaced := conn != nil
			drop("")
			conn, enc = c, sw.typ.encoder(c.bw)
			sw.setWorking(true)
			p.status.activate()
			if replaced {
				t.log.Info("closed TCP streaming connection with remote peer", "stream-writer-type", sw.typ.String(), "remote-peer-id", hexID(p.id))
			}
			t.log.Info("established TCP streaming connection with remote peer", "stream-writer-type", sw.typ.String(),
				"local-member-id", hexID(t.cfg.ID), "remote-peer-id", hexID(p.id))
		case <-p.ctx.Done():
			// Ship what raft already handed us (proposals forwarded to the new leader just
			// before this member stops, its last appends), within a short bound.
			if conn != nil && len(sw.msgc) > 0 {
				m := <-sw.msgc
				sw.write(conn, enc, &m, len(sw.msgc), stopFlushLimit)
			}
			return
		}
	}
}

// stopFlushLimit bounds how long a stopping member spends sending what was queued.
const stopFlushLimit = 500 * time.Millisecond

// write encodes m, and whatever else is queued (up to a batch), then flushes within timeout.
// queued is how many more messages are waiting.
func (sw *streamWriter) write(c *outgoingConn, enc encoder, m *raftpb.Message, queued int, timeout time.Duration) error {
	c.rc.SetWriteDeadline(time.Now().Add(timeout))
	size := m.Size()
	if err := enc.encode(m); err != nil {
		return err
	}
	for i := 0; i < queued && i < streamBufSize/2; i++ {
		next := <-sw.msgc
		if err := enc.encode(&next); err != nil {
			return err
		}
		size += next.Size()
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	if err := c.rc.Flush(); err != nil {
		return err
	}
	sw.sent.Add(float64(size))
	return nil
}

// streamReader keeps one stream type open to a peer, reading the messages it sends us.
type streamReader struct {
	p   *peer
	typ streamType
}

// dialRetry is how long a reader waits before opening a stream again, as upstream.
const dialRetry = 100 * time.Millisecond

func (sr *streamReader) run() {
	p, t := sr.p, sr.p.t
	for {
		body, err := sr.dial()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			p.reportRefusal(err)
			p.status.deactivate(sr.typ.String()+" dial", err)
		} else {
			p.status.activate()
			t.log.Info("established TCP streaming connection with remote peer", "stream-reader-type", sr.typ.String(),
				"local-member-id", hexID(t.cfg.ID), "remote-peer-id", hexID(p.id))
			err = sr.decodeLoop(body)
			if p.ctx.Err() != nil {
				return
			}
			t.log.Warn("lost TCP streaming connection with remote peer", "stream-reader-type", sr.typ.String(),
				"local-member-id", hexID(t.cfg.ID), "remote-peer-id", hexID(p.id), "error", err)
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.m.recvFailures.WithLabelValues(hexID(p.id)).Inc()
				p.status.deactivate(sr.typ.String()+" read", err)
			}
		}
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(dialRetry):
		}
	}
}

func (sr *streamReader) decodeLoop(body io.ReadCloser) error {
	p := sr.p
	defer body.Close()
	r := countingReader{bufio.NewReaderSize(body, 64<<10), p.t.m.recvBytes.WithLabelValues(hexID(p.id))}
	var dec decoder = &messageDecoder{r: r}
	if sr.typ == streamMsgAppV2 {
		dec = &msgAppV2Decoder{r: r, local: p.t.cfg.ID, remote: p.id}
	}
	for {
		m, err := dec.decode()
		if err != nil {
			return err
		}
		if isLinkHeartbeat(&m) {
			continue
		}
		if failpoint.Hit(failpoint.RaftDropHeartbeat) {
			continue
		}
		p.receive(m)
	}
}

// dial opens the stream and reads the peer's answer the way upstream's members do.
func (sr *streamReader) dial() (io.ReadCloser, error) {
	p, t := sr.p, sr.p.t
	url := p.pickURL() + sr.typ.endpoint() + "/" + hexID(t.cfg.ID)
	req, err := t.newRequest(p.ctx, http.MethodGet, url, nil)
	if err != nil {
		p.unreachable()
		return nil, fmt.Errorf("failed to make http request to %v (%w)", url, err)
	}
	req.Header.Set(HeaderTo, hexID(p.id))
	resp, err := t.streamRT.RoundTrip(req)
	if err != nil {
		p.unreachable()
		if strings.Contains(err.Error(), "malformed HTTP") || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
			return nil, &foreignError{err.Error()}
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusOK && notEtcd(resp) == "" {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	p.unreachable()
	if foreign := notEtcd(resp); foreign != "" {
		return nil, &foreignError{foreign}
	}
	switch resp.StatusCode {
	case http.StatusGone:
		t.memberRemoved(p.id)
		return nil, errRemoved
	case http.StatusNotFound:
		return nil, fmt.Errorf("peer %s failed to find local node %s", hexID(p.id), hexID(t.cfg.ID))
	case http.StatusPreconditionFailed:
		return nil, refusedError(resp, strings.TrimSuffix(string(body), "\n"))
	default:
		return nil, fmt.Errorf("unhandled http status %d", resp.StatusCode)
	}
}
