package etcdserver

import (
	"context"
	"encoding/binary"
	"time"

	"go.etcd.io/raft/v3"
)

// notifier is shared by every read waiting for the same ReadIndex round.
type notifier struct {
	c   chan struct{}
	err error
	// waiters counts the reads that joined (under the server's readMu).
	waiters int
}

func newNotifier() *notifier { return &notifier{c: make(chan struct{})} }

func (n *notifier) notify(err error) {
	n.err = err
	close(n.c)
}

// LinearizableReadNotify waits until this member has applied everything committed before the
// call, confirmed by a quorum through ReadIndex.
func (s *Server) LinearizableReadNotify(ctx context.Context) error {
	s.readMu.Lock()
	nc := s.readNotifier
	nc.waiters++
	s.readMu.Unlock()
	select {
	case s.readWake <- struct{}{}:
	default:
	}
	select {
	case <-nc.c:
		return nc.err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopping:
		return ErrStopped
	}
}

// readLoop runs one ReadIndex round at a time for every read that arrived before it started.
// Rounds are paced as the proposal batches are (roundPace): when the last round served several
// reads on a cluster of several members, the next starts no sooner than roundPace after it, so
// a round (a heartbeat to every follower and their answers) serves more reads under load; a
// lone reader's round starts at once.
func (s *Server) readLoop() {
	defer s.wg.Done()
	pace := time.NewTimer(time.Hour)
	pace.Stop()
	var lastStart time.Time
	lastWaiters := 0
	for {
		select {
		case <-s.readWake:
		case <-s.stopping:
			return
		}
		if wait := paceWait(roundPace, lastWaiters, time.Since(lastStart)); wait > 0 && s.mem.Count() > 1 {
			pace.Reset(wait)
			select {
			case <-pace.C:
			case <-s.stopping:
				return
			}
		}
		s.readMu.Lock()
		nr := s.readNotifier
		s.readNotifier = newNotifier()
		lastWaiters = nr.waiters
		s.readMu.Unlock()
		lastStart = time.Now()
		nr.notify(s.readIndexRound())
	}
}

// readCtxLen is the length of a ReadIndex round's context: its ID, big-endian.
const readCtxLen = 8

// readIndexRetry is how long a ReadIndex round waits for an answer before asking again, as
// upstream's (its slow-read-index counter counts each such retry).
const readIndexRetry = 500 * time.Millisecond

func (s *Server) readIndexRound() error {
	id := s.reqIDs.next()
	rctx := make([]byte, readCtxLen)
	binary.BigEndian.PutUint64(rctx, id)
	deadline := time.After(s.cfg.requestTimeout())
	retry := time.NewTicker(readIndexRetry)
	defer retry.Stop()
	send := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
		defer cancel()
		return s.node.ReadIndex(ctx, rctx)
	}
	// Raft drops a ReadIndex, without an answer, while this member knows no leader (during an
	// election or a leadership transfer). Asking again as soon as a leader is known answers such
	// a read in milliseconds instead of at the next retry tick.
	leaderChanged := s.leaders.Next()
	if err := send(); err != nil {
		s.m.readIndexFailed.Inc()
		return ErrTimeout
	}
	for {
		select {
		case <-leaderChanged:
			leaderChanged = s.leaders.Next()
			if s.lead.Load() == raft.None {
				continue
			}
			if err := send(); err != nil {
				s.m.readIndexFailed.Inc()
				return ErrTimeout
			}
			retry.Reset(readIndexRetry)
		case rs := <-s.readc:
			if len(rs.RequestCtx) != readCtxLen || binary.BigEndian.Uint64(rs.RequestCtx) != id {
				continue // an answer to an earlier, abandoned round
			}
			select {
			case <-s.applyW.wait(rs.Index):
				return nil
			case <-deadline:
				return ErrTimeout
			case <-s.stopping:
				return ErrStopped
			}
		case <-retry.C:
			// The request may have been dropped (no leader yet): ask again.
			s.m.slowReads.Inc()
			if err := send(); err != nil {
				s.m.readIndexFailed.Inc()
				return ErrTimeout
			}
		case <-deadline:
			s.m.slowReads.Inc()
			return ErrTimeout
		case <-s.stopping:
			return ErrStopped
		}
	}
}
