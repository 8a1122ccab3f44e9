package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// peer owns the stream to one remote member.
type peer struct {
	t     *Transport
	id    uint64
	msgc  chan raftpb.Message
	stopc chan struct{}

	mu   sync.Mutex
	urls []string
	next int

	// connected: a stream to the peer carries messages (run's goroutine only), for
	// etcd_network_active_peers and etcd_network_disconnected_peers_total.
	connected bool
}

func (p *peer) setURLs(urls []string) {
	p.mu.Lock()
	p.urls = append([]string(nil), urls...)
	p.mu.Unlock()
}

func (p *peer) pickURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.urls[p.next%len(p.urls)]
	p.next++
	return strings.TrimRight(u, "/")
}

// run keeps a stream open, reconnecting with backoff, until the peer is removed.
func (p *peer) run() {
	backoff := 50 * time.Millisecond
	lastRefusal := ""
	for {
		select {
		case <-p.stopc:
			return
		default:
		}
		start := time.Now()
		refusal, err := p.stream()
		if p.connected {
			p.connected = false
			local, remote := hexID(p.t.cfg.ID), hexID(p.id)
			p.t.m.activeGauge.WithLabelValues(local, remote).Dec()
			p.t.m.disconnected.WithLabelValues(local, remote).Inc()
		}
		if refusal != "" && refusal != lastRefusal {
			p.t.log.Error("peer refused our stream", "peer-id", fmt.Sprintf("%x", p.id), "reason", refusal,
				"local-member-id", fmt.Sprintf("%x", p.t.cfg.ID), "local-version", p.t.cfg.ServerVersion)
		}
		lastRefusal = refusal
		if err != nil {
			p.t.cfg.Raft.ReportUnreachable(p.id)
		}
		if time.Since(start) > 5*time.Second {
			backoff = 50 * time.Millisecond // it was working: reconnect quickly
		}
		select {
		case <-p.stopc:
			return
		case <-time.After(backoff):
		}
		if backoff < time.Second {
			backoff *= 2
		}
	}
}

// stream sends queued messages over one POST until it fails or the peer is removed. It returns
// the peer's reason when the handshake was refused.
func (p *peer) stream() (refusal string, err error) {
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, p.pickURL()+StreamPath, pr)
	if err != nil {
		return "", err
	}
	p.setHandshake(req)

	type result struct {
		refusal string
		err     error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := p.t.client.Do(req)
		if err != nil {
			pr.CloseWithError(err)
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		// An answer ends the stream (a refusal comes before the body is read): fail pending
		// writes now instead of leaving the sender blocked on the pipe.
		pr.CloseWithError(io.ErrClosedPipe)
		if resp.StatusCode != http.StatusOK {
			done <- result{refusal: fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body))), err: fmt.Errorf("refused")}
			return
		}
		done <- result{err: io.EOF}
	}()
	to := hexID(p.id)
	bw := bufio.NewWriterSize(countingWriter{pw, p.t.m.sentBytes.WithLabelValues(to)}, 64<<10)
	// abort ends the request after a write failed and reports why the peer ended it, if it did.
	abort := func(err error) (string, error) {
		p.t.m.sentFailures.WithLabelValues(to).Inc()
		pw.CloseWithError(err)
		r := <-done
		return r.refusal, err
	}
	// Idle streams send link heartbeats, a third of the peer's read timeout apart, as upstream.
	heartbeat := time.NewTicker(p.t.cfg.ReadTimeout / 3)
	defer heartbeat.Stop()
	sent := false
	for {
		select {
		case <-heartbeat.C:
			if sent {
				sent = false
				continue
			}
			if err := p.flushWithin(bw, pw, func() error { _, err := bw.Write(make([]byte, 8)); return err }); err != nil {
				return abort(err)
			}
		case m := <-p.msgc:
			sent = true
			if err := writeFrame(bw, &m); err != nil {
				return abort(err)
			}
			// Batch whatever else is queued before flushing.
			for more := true; more; {
				select {
				case m := <-p.msgc:
					if err := writeFrame(bw, &m); err != nil {
						return abort(err)
					}
				default:
					more = false
				}
			}
			if err := p.flushWithin(bw, pw, nil); err != nil {
				return abort(err)
			}
			if !p.connected {
				p.connected = true
				p.t.m.activeGauge.WithLabelValues(hexID(p.t.cfg.ID), to).Inc()
			}
		case r := <-done:
			pw.CloseWithError(io.ErrClosedPipe)
			return r.refusal, r.err
		case <-p.stopc:
			// Ship what raft already handed us (e.g. proposals forwarded to the new leader just
			// before this member stops); a failure here changes nothing, the member is going. A peer
			// that does not read is cut off after a short bound by closing the pipe under the writer.
			cut := time.AfterFunc(500*time.Millisecond, func() { pw.CloseWithError(io.ErrClosedPipe) })
			defer cut.Stop()
			for more := true; more; {
				select {
				case m := <-p.msgc:
					if writeFrame(bw, &m) != nil {
						more = false
					}
				default:
					more = false
				}
			}
			bw.Flush()
			pw.CloseWithError(io.ErrClosedPipe)
			<-done
			return "", nil
		}
	}
}

// errWriteTimeout ends a stream whose peer took no data for the write timeout.
var errWriteTimeout = errors.New("peer took no data within the raft write timeout")

// flushWithin runs write (if any) and flushes, giving up when the peer has not taken the data
// within the write timeout: the pipe is closed under the writer.
func (p *peer) flushWithin(bw *bufio.Writer, pw *io.PipeWriter, write func() error) error {
	cut := time.AfterFunc(p.t.cfg.WriteTimeout, func() { pw.CloseWithError(errWriteTimeout) })
	defer cut.Stop()
	if write != nil {
		if err := write(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// setHandshake adds the versioned handshake headers every stream to this peer carries.
func (p *peer) setHandshake(req *http.Request) {
	req.Header.Set(HeaderClusterID, fmt.Sprintf("%x", p.t.clusterID()))
	req.Header.Set(HeaderFrom, fmt.Sprintf("%x", p.t.cfg.ID))
	req.Header.Set(HeaderTo, fmt.Sprintf("%x", p.id))
	req.Header.Set(HeaderServerVersion, p.t.cfg.ServerVersion)
	req.Header.Set(HeaderMinCluster, p.t.cfg.MinClusterVersion)
	req.Header.Set("Content-Type", "application/octet-stream")
}
