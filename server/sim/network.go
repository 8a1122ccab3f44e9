package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/etcdserver"
	"etcdx/server/transport"
)

// Faults are what the network does to each raft message, drawn from the run's seed.
type Faults struct {
	// Drop, Duplicate and Reorder are per-message probabilities; a reordered message is
	// delivered on its own after a random delay instead of in its link's order.
	Drop, Duplicate, Reorder float64
	// MaxDelay bounds the delay each message gets (uniform in [0, MaxDelay]).
	MaxDelay time.Duration
}

// Network is the members' in-memory peer network: raft messages go through per-link queues
// with the configured faults; peer HTTP requests are served by the target member's peer
// handler in process. Links can be cut one way or both (partitions).
type Network struct {
	mu      sync.Mutex
	rng     *rand.Rand
	faults  Faults
	members map[uint64]*endpoint
	byHost  map[string]*endpoint // peer URL host -> member
	cut     map[[2]uint64]bool   // {from, to}: messages from -> to are lost
	starved map[string]bool      // peer URL hosts every message to which is lost (Starve)
	links   map[[2]uint64]chan delivery
	tap     func(raftpb.Message)      // sees every raft message sent, before the faults (SetTap)
	lose    func(raftpb.Message) bool // the messages a directed test has the network lose (SetLose)
	stop    chan struct{}
	wg      sync.WaitGroup
}

// endpoint is one incarnation of a member on the network.
type endpoint struct {
	id      uint64
	gen     int // incremented at every restart: what was queued for the old one is lost
	raft    transport.Raft
	handler http.Handler
	up      bool
	since   time.Time
	peers   map[uint64]bool
}

type delivery struct {
	m   raftpb.Message
	gen int
	at  time.Time
}

// NewNetwork is a network whose faults are drawn from rng.
func NewNetwork(rng *rand.Rand, f Faults) *Network {
	return &Network{rng: rng, faults: f, members: map[uint64]*endpoint{}, byHost: map[string]*endpoint{},
		cut: map[[2]uint64]bool{}, starved: map[string]bool{}, links: map[[2]uint64]chan delivery{}, stop: make(chan struct{})}
}

// Close stops delivering and waits for the link goroutines.
func (n *Network) Close() {
	n.mu.Lock()
	select {
	case <-n.stop:
	default:
		close(n.stop)
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// SetFaults changes the faults from now on.
func (n *Network) SetFaults(f Faults) {
	n.mu.Lock()
	n.faults = f
	n.mu.Unlock()
}

// SetTap has f see every raft message a member sends from now on, before the network's faults
// (nil: none). f runs with the network locked: it must not call the network.
func (n *Network) SetTap(f func(raftpb.Message)) {
	n.mu.Lock()
	n.tap = f
	n.mu.Unlock()
}

// SetLose has the network lose every raft message f picks from now on (nil: none), as a cut
// link does, down to the message type. f runs with the network locked: it must not call the
// network.
func (n *Network) SetLose(f func(raftpb.Message) bool) {
	n.mu.Lock()
	n.lose = f
	n.mu.Unlock()
}

// Cut loses every message from -> to (one way); Mend restores the link.
func (n *Network) Cut(from, to uint64) {
	n.mu.Lock()
	n.cut[[2]uint64{from, to}] = true
	n.mu.Unlock()
}

// Mend restores the link from -> to.
func (n *Network) Mend(from, to uint64) {
	n.mu.Lock()
	delete(n.cut, [2]uint64{from, to})
	n.mu.Unlock()
}

// MendAll restores every link.
func (n *Network) MendAll() {
	n.mu.Lock()
	n.cut = map[[2]uint64]bool{}
	n.mu.Unlock()
}

// Starve loses every message to the member at peerURL for the rest of the run, whatever MendAll
// does: a planted bug (a member that can never catch up) for the checks to catch. It takes the
// URL, which a member has before it first starts; its ID comes later.
func (n *Network) Starve(peerURL string) {
	n.mu.Lock()
	n.starved[hostOf(peerURL)] = true
	n.mu.Unlock()
}

// isStarved reports whether messages to id are lost by Starve. n.mu is held.
func (n *Network) isStarved(id uint64) bool {
	for h := range n.starved {
		if ep := n.byHost[h]; ep != nil && ep.id == id {
			return true
		}
	}
	return false
}

// Isolate cuts id from every other member, both ways.
func (n *Network) Isolate(id uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for other := range n.members {
		if other != id {
			n.cut[[2]uint64{id, other}] = true
			n.cut[[2]uint64{other, id}] = true
		}
	}
}

// For is the peer network of the member whose peer URL is peerURL.
func (n *Network) For(peerURL string) etcdserver.PeerNetwork {
	return &memberPeers{n: n, host: hostOf(peerURL)}
}

// Serve has the member answer peer HTTP requests (its PeerHandler) from now on.
func (n *Network) Serve(peerURL string, h http.Handler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ep := n.byHost[hostOf(peerURL)]; ep != nil {
		ep.handler = h
	}
}

func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Host
}

// memberPeers is one member's view of the network (etcdserver.PeerNetwork).
type memberPeers struct {
	n    *Network
	host string
	ep   *endpoint
}

func (p *memberPeers) Transport(cfg transport.Config) etcdserver.PeerTransport {
	n := p.n
	n.mu.Lock()
	defer n.mu.Unlock()
	ep := n.members[cfg.ID]
	gen := 0
	if ep != nil {
		gen = ep.gen + 1
	}
	// A long-standing connection, so the strict reconfiguration check counts the peer at once.
	ep = &endpoint{id: cfg.ID, gen: gen, raft: cfg.Raft, up: true, since: time.Now().Add(-time.Minute), peers: map[uint64]bool{}}
	n.members[cfg.ID] = ep
	n.byHost[p.host] = ep
	p.ep = ep
	return &memTransport{n: n, ep: ep}
}

func (p *memberPeers) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: roundTripper{p}}
}

// roundTripper serves a member's peer request with the target member's handler, in process,
// unless the link between them is cut or the target is down.
type roundTripper struct{ p *memberPeers }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	n := rt.p.n
	n.mu.Lock()
	target := n.byHost[req.URL.Host]
	from := rt.p.ep
	// A member that has no transport yet (one joining: it asks for the members before it
	// knows its ID) has no links to cut.
	ok := target != nil && target.up && target.handler != nil &&
		(from == nil || !n.cut[[2]uint64{from.id, target.id}] && !n.cut[[2]uint64{target.id, from.id}])
	var h http.Handler
	if ok {
		h = target.handler
	}
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("sim: %s unreachable", req.URL.Host)
	}
	body := []byte{}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	in := req.Clone(req.Context())
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.RequestURI = req.URL.RequestURI()
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { defer close(done); h.ServeHTTP(rec, in) }()
	select {
	case <-done:
		return rec.Result(), nil
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

// memTransport is a member's raft transport on the network.
type memTransport struct {
	n  *Network
	ep *endpoint
}

func (t *memTransport) Send(msgs []raftpb.Message) {
	for _, m := range msgs {
		t.n.send(t.ep, m)
	}
}

// send applies the faults to one message and queues it on its link.
func (n *Network) send(from *endpoint, m raftpb.Message) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tap != nil {
		n.tap(m)
	}
	to := n.members[m.To]
	if !from.up || to == nil || !to.up || n.cut[[2]uint64{from.id, m.To}] || n.isStarved(m.To) || n.rng.Float64() < n.faults.Drop ||
		n.lose != nil && n.lose(m) { // drawn after the faults: a seed's schedule stays as it was
		if from.up && to != nil {
			go from.raft.ReportUnreachable(m.To) // as the real transport reports a failed send
		}
		return
	}
	copies := 1
	// A duplicated proposal is a second proposal (raft appends what it is given, as upstream's),
	// and a real transport delivers a message at most once: only the other messages, which raft
	// is built to receive twice, are duplicated. (The draw is made either way, so the seeds'
	// schedules stay as they were.)
	if n.rng.Float64() < n.faults.Duplicate && m.Type != raftpb.MsgProp {
		copies = 2
	}
	for i := 0; i < copies; i++ {
		var delay time.Duration
		if n.faults.MaxDelay > 0 {
			delay = time.Duration(n.rng.Int63n(int64(n.faults.MaxDelay) + 1))
		}
		d := delivery{m: m, gen: to.gen, at: time.Now().Add(delay)}
		if n.rng.Float64() < n.faults.Reorder {
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				select {
				case <-time.After(delay):
					n.deliver(from.id, d)
				case <-n.stop:
				}
			}()
			continue
		}
		select {
		case n.link(from.id, m.To) <- d:
		default:
			go from.raft.ReportUnreachable(m.To) // the link's buffer is full, as a stuck stream
		}
	}
}

// link is the ordered queue from -> to, with the goroutine that delivers it. n.mu is held.
func (n *Network) link(from, to uint64) chan delivery {
	key := [2]uint64{from, to}
	if ch, ok := n.links[key]; ok {
		return ch
	}
	ch := make(chan delivery, 4096)
	n.links[key] = ch
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			select {
			case d := <-ch:
				if wait := time.Until(d.at); wait > 0 {
					select {
					case <-time.After(wait):
					case <-n.stop:
						return
					}
				}
				n.deliver(from, d)
			case <-n.stop:
				return
			}
		}
	}()
	return ch
}

// deliver hands d to its target if the target incarnation is still up and the link still holds.
func (n *Network) deliver(from uint64, d delivery) {
	n.mu.Lock()
	to := n.members[d.m.To]
	ok := to != nil && to.up && to.gen == d.gen && !n.cut[[2]uint64{from, d.m.To}]
	var r transport.Raft
	if ok {
		r = to.raft
	}
	n.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.Process(ctx, d.m)
}

func (t *memTransport) SendSnapshot(m raftpb.Message, db io.ReadCloser) {
	n := t.n
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		data, err := io.ReadAll(db)
		db.Close()
		n.mu.Lock()
		to := n.members[m.To]
		ok := err == nil && t.ep.up && to != nil && to.up && !n.cut[[2]uint64{t.ep.id, m.To}] && !n.isStarved(m.To)
		var r transport.Raft
		if ok {
			r = to.raft
		}
		n.mu.Unlock()
		status := raft.SnapshotFailure
		if ok && r.ReceiveSnapshotDB(m.Snapshot.Metadata.Index, bytes.NewReader(data)) == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if r.Process(ctx, m) == nil {
				status = raft.SnapshotFinish
			}
			cancel()
		}
		t.ep.raft.ReportSnapshot(m.To, status)
	}()
}

func (t *memTransport) AddPeer(id uint64, _ []string) {
	t.n.mu.Lock()
	t.ep.peers[id] = true
	t.n.mu.Unlock()
}

func (t *memTransport) RemovePeer(id uint64) {
	t.n.mu.Lock()
	delete(t.ep.peers, id)
	t.n.mu.Unlock()
}

func (t *memTransport) ActiveSince(id uint64) time.Time {
	t.n.mu.Lock()
	defer t.n.mu.Unlock()
	return t.activeSince(id)
}

// activeSince is ActiveSince with n.mu held.
func (t *memTransport) activeSince(id uint64) time.Time {
	n := t.n
	p := n.members[id]
	if p == nil || !p.up || !t.ep.peers[id] || n.cut[[2]uint64{t.ep.id, id}] || n.cut[[2]uint64{id, t.ep.id}] {
		return time.Time{}
	}
	return p.since
}

func (t *memTransport) ActivePeers() int {
	t.n.mu.Lock()
	defer t.n.mu.Unlock()
	active := 0
	for id := range t.ep.peers {
		if !t.activeSince(id).IsZero() {
			active++
		}
	}
	return active
}

func (t *memTransport) Handler() http.Handler              { return http.NotFoundHandler() }
func (t *memTransport) Collectors() []prometheus.Collector { return nil }

func (t *memTransport) Stop() {
	t.n.mu.Lock()
	t.ep.up = false
	t.n.mu.Unlock()
}
