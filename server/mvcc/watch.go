package mvcc

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// ErrWatcherNotFound is returned for an unknown watch ID.
var ErrWatcherNotFound = errors.New("mvcc: watcher not found")

// progressAllID is the watch ID of a stream-wide progress notification (clientv3.InvalidWatchID).
const progressAllID = -1

// WatchResponse carries events for one watcher, or a progress notification (no events), or a
// compaction cancel (CompactRevision set).
type WatchResponse struct {
	WatchID         int64
	Events          []Event
	Revision        int64
	CompactRevision int64
}

// EventFilter drops events it returns true for.
type EventFilter func(Event) bool

type watcher struct {
	id       int64
	key, end []byte
	minRev   int64 // next revision this watcher needs
	// startRev is the revision the watch asked to start from (0: the next change). Until the
	// store reaches it, the watcher gets no progress notification: a client library resumes a
	// broken watch after the last progress revision it saw, so a notification below the start
	// would have it resume before the start and deliver events the watch never asked for
	// (upstream's progressIfSync holds them back alike).
	startRev int64
	filters  []EventFilter
	ws       *WatchStream
	synced   bool
}

func (w *watcher) matches(key []byte) bool {
	if w.end == nil {
		return bytes.Equal(key, w.key)
	}
	if bytes.Compare(key, w.key) < 0 {
		return false
	}
	return len(w.end) == 0 || bytes.Compare(key, w.end) < 0
}

// wants reports whether ev is for w: at or after the revision it needs, in its range, and not
// dropped by a filter.
func (w *watcher) wants(ev *Event) bool {
	if ev.KV.ModRevision < w.minRev || !w.matches(ev.KV.Key) {
		return false
	}
	for _, f := range w.filters {
		if f(*ev) {
			return false
		}
	}
	return true
}

// pick returns the events of evs that w wants, in order. When they are one run of evs (the usual
// case: a watcher of a prefix gets every event of a revision) it returns that run itself, shared
// with other watchers and capped so that an append cannot write into it: a fan-out to thousands
// of watchers then allocates nothing per watcher. Responses only read their events.
func (w *watcher) pick(evs []Event) []Event {
	start, end := -1, -1
	var out []Event // set once the wanted events are not one run
	for i := range evs {
		switch {
		case !w.wants(&evs[i]):
		case out != nil:
			out = append(out, evs[i])
		case start < 0:
			start, end = i, i+1
		case end == i:
			end++
		default: // a gap: copy the run so far and go on copying
			out = make([]Event, 0, end-start+len(evs)-i)
			out = append(append(out, evs[start:end]...), evs[i])
		}
	}
	if out != nil {
		return out
	}
	if start < 0 {
		return nil
	}
	return evs[start:end:end]
}

// watchGroups tracks every watcher: synced ones get events from the write path, the others
// catch up from stored history in syncLoop.
type watchGroups struct {
	s        *Store
	mu       sync.Mutex
	watchers map[*watcher]struct{}
	streams  map[*WatchStream]struct{}
	wake     chan struct{}
}

// counts are the watcher gauges: watchers, unsynced (slow) watchers, open streams.
func (g *watchGroups) counts() (watchers, slow, streams int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for w := range g.watchers {
		if !w.synced {
			slow++
		}
	}
	return len(g.watchers), slow, len(g.streams)
}

// pending is how many responses wait in watch streams' queues.
func (g *watchGroups) pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for ws := range g.streams {
		n += len(ws.ch)
	}
	return n
}

func newWatchGroups(s *Store) *watchGroups {
	return &watchGroups{s: s, watchers: map[*watcher]struct{}{}, streams: map[*WatchStream]struct{}{}, wake: make(chan struct{}, 1)}
}

// notify is called by a write transaction's End with the store lock held.
func (g *watchGroups) notify(rev int64, changes []change) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.watchers) == 0 {
		return
	}
	evs := make([]Event, len(changes))
	for i, c := range changes {
		evs[i].KV = c.kv
		if c.tombstone {
			evs[i].Type = mvccpb.DELETE
		}
	}
	for w := range g.watchers {
		if !w.synced || rev < w.minRev {
			continue
		}
		picked := w.pick(evs)
		if len(picked) == 0 {
			w.minRev = rev + 1
			continue
		}
		select {
		case w.ws.ch <- WatchResponse{WatchID: w.id, Events: picked, Revision: rev}:
			w.minRev = rev + 1
			g.s.metrics.events.Add(float64(len(picked)))
		default:
			// The stream is not keeping up: catch up from the store later.
			w.synced = false
			g.kick()
		}
	}
}

func (g *watchGroups) kick() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *watchGroups) compacted(int64) { g.kick() }

// retryBehind is how soon the catch-up runs again after a pass that delivered to some watchers
// but left others behind a full stream queue. Without it they waited for the next write's
// overflow or the 100 ms tick, so once writes stopped, a stream with a thousand lagging watchers
// took many ticks to drain. Upstream retries its blocked watchers every 10 ms too. A pass that
// delivered nothing (a client not reading) waits for the tick, so a stuck stream does not
// re-read history every 10 ms.
const retryBehind = 10 * time.Millisecond

func (g *watchGroups) syncLoop(stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	retry := time.NewTimer(retryBehind)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-t.C:
		case <-g.wake:
		case <-retry.C:
		case <-stop:
			return
		}
		if sent, behind := g.syncOnce(); sent && behind {
			retry.Reset(retryBehind)
		}
	}
}

// syncOnce delivers stored history to unsynced watchers, the longest-waiting first. It reports
// whether it sent anything and whether any watcher was left behind because its stream's queue
// was full. Oldest-first makes a stream's lagging watchers take turns: picked at random, some
// lost pass after pass and made the tail of the delivery latency. The store's read lock keeps
// writers out, so a watcher moved to synced misses nothing between history and live events.
func (g *watchGroups) syncOnce() (sent, behind bool) {
	s := g.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	cur, compactRev := s.currentRev, s.compactRev
	var lagging []*watcher
	for w := range g.watchers {
		if w.synced {
			continue
		}
		if len(w.ws.ch) == cap(w.ws.ch) {
			// Nothing can go to its stream now; leaving it out keeps a client that stopped
			// reading, far behind, from setting how much history every pass reads.
			behind = true
			continue
		}
		if w.minRev < compactRev {
			select {
			case w.ws.ch <- WatchResponse{WatchID: w.id, CompactRevision: compactRev}:
				delete(g.watchers, w)
				delete(w.ws.watchers, w.id)
				sent = true
			default:
				behind = true
			}
			continue
		}
		lagging = append(lagging, w)
	}
	if len(lagging) == 0 {
		return sent, behind
	}
	slices.SortFunc(lagging, func(a, b *watcher) int { return cmp.Compare(a.minRev, b.minRev) })
	var evs []Event
	if minRev := lagging[0].minRev; minRev <= cur {
		var err error
		if evs, err = s.eventsBetween(minRev, cur, newKeySet(lagging).has); err != nil {
			s.log.Error("watch catch-up failed to read history", "from", minRev, "to", cur, "error", err)
			return sent, behind
		}
	}
	for _, w := range lagging {
		picked := w.pick(evs)
		if len(picked) > 0 {
			select {
			case w.ws.ch <- WatchResponse{WatchID: w.id, Events: picked, Revision: cur}:
				s.metrics.events.Add(float64(len(picked)))
				sent = true
			default:
				behind = true
				continue // its turn comes first in the next pass
			}
		}
		if w.minRev <= cur {
			w.minRev = cur + 1
		}
		w.synced = true
	}
	return sent, behind
}

// WatchStream is a set of watchers whose responses share one channel (one gRPC Watch stream).
type WatchStream struct {
	g        *watchGroups
	ch       chan WatchResponse
	watchers map[int64]*watcher // guarded by g.mu
	nextID   int64
}

// NewWatchStream opens a stream; Close it when done.
func (s *Store) NewWatchStream() *WatchStream {
	ws := &WatchStream{g: s.watch, ch: make(chan WatchResponse, 128), watchers: map[int64]*watcher{}}
	s.watch.mu.Lock()
	s.watch.streams[ws] = struct{}{}
	s.watch.mu.Unlock()
	return ws
}

// ErrWatchIDInUse is returned when a client picks an ID that is taken.
var ErrWatchIDInUse = errors.New("mvcc: duplicate watch ID provided on the WatchStream")

// Watch adds a watcher for [key, end) from startRev (0: the next change). id 0 picks one; a
// caller-chosen id must be unused.
func (ws *WatchStream) Watch(id int64, key, end []byte, startRev int64, filters ...EventFilter) (int64, error) {
	s, g := ws.g.s, ws.g
	defer ws.lockStoreAndGroups()()
	if id == 0 {
		for {
			if _, taken := ws.watchers[ws.nextID]; !taken {
				break
			}
			ws.nextID++
		}
		id = ws.nextID
		ws.nextID++
	} else if _, taken := ws.watchers[id]; taken {
		return -1, ErrWatchIDInUse
	}
	w := &watcher{id: id, key: key, end: end, filters: filters, ws: ws, startRev: max(startRev, 0)}
	if startRev <= 0 || startRev > s.currentRev {
		w.synced = true
		w.minRev = s.currentRev + 1
		if startRev > w.minRev {
			w.minRev = startRev
		}
	} else {
		w.minRev = startRev
		g.kick()
	}
	ws.watchers[id] = w
	g.watchers[w] = struct{}{}
	return id, nil
}

// Chan carries this stream's responses.
func (ws *WatchStream) Chan() <-chan WatchResponse { return ws.ch }

// Cancel removes a watcher.
func (ws *WatchStream) Cancel(id int64) error {
	g := ws.g
	g.mu.Lock()
	defer g.mu.Unlock()
	w, ok := ws.watchers[id]
	if !ok {
		return ErrWatcherNotFound
	}
	delete(ws.watchers, id)
	delete(g.watchers, w)
	return nil
}

// RequestProgress sends an empty response at the current revision for watcher id if it is
// synced (an unsynced watcher will soon send real events, which carry progress anyway) and the
// store has reached the revision it starts from.
func (ws *WatchStream) RequestProgress(id int64) {
	s := ws.g.s
	defer ws.lockStoreAndGroups()()
	w, ok := ws.watchers[id]
	if !ok || !w.synced || s.currentRev < w.startRev {
		return
	}
	select {
	case ws.ch <- WatchResponse{WatchID: id, Revision: s.currentRev}:
	default:
	}
}

// RequestProgressAll sends one stream-wide progress notification if every watcher is synced and
// the store has reached every watcher's start revision, and reports whether it did.
func (ws *WatchStream) RequestProgressAll() bool {
	s := ws.g.s
	defer ws.lockStoreAndGroups()()
	for _, w := range ws.watchers {
		if !w.synced || s.currentRev < w.startRev {
			return false
		}
	}
	select {
	case ws.ch <- WatchResponse{WatchID: progressAllID, Revision: s.currentRev}:
		return true
	default:
		return false
	}
}

// Close removes every watcher of the stream.
func (ws *WatchStream) Close() {
	g := ws.g
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, w := range ws.watchers {
		delete(g.watchers, w)
		delete(ws.watchers, id)
	}
	delete(g.streams, ws)
}

// lockStoreAndGroups takes the store's read lock (no writes while watchers change state) and then
// the groups' lock, in the order the write path uses; the returned func releases both.
func (ws *WatchStream) lockStoreAndGroups() func() {
	ws.g.s.mu.RLock()
	ws.g.mu.Lock()
	return func() {
		ws.g.mu.Unlock()
		ws.g.s.mu.RUnlock()
	}
}
