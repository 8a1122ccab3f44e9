package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"etcdx/server/broadcast"
	"etcdx/server/etcdserver"
	"etcdx/server/httpapi"
	"etcdx/server/version"
)

// Member is one member of the simulated cluster.
type Member struct {
	Name    string
	PeerURL string
	cfg     etcdserver.Config

	// clock is the member's lease clock: the wall clock plus what the harness jumped it by.
	clock Clock
	// Disk is the member's WAL disk, with its power.
	Disk *Disk

	mu  sync.Mutex
	srv *etcdserver.Server // nil while down
}

// Clock is a member's lease clock (etcdserver.Config.LeaseClock): real time, plus jumps.
type Clock struct{ offset atomic.Int64 }

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Jump moves the clock forward by d, at once.
func (c *Clock) Jump(d time.Duration) { c.offset.Add(int64(d)) }

// JumpClock moves a member's lease clock forward.
func (m *Member) JumpClock(d time.Duration) { m.clock.Jump(d) }

// Server is the running member, or nil while it is down.
func (m *Member) Server() *etcdserver.Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.srv
}

// ID is the member's ID (0 before its first start).
func (m *Member) ID() uint64 {
	if s := m.Server(); s != nil {
		return s.ID()
	}
	return 0
}

// Cluster is N members bootstrapped together on one Network. Each member has a slot; a
// replaced member's slot holds its successor.
type Cluster struct {
	Net *Network
	log *slog.Logger
	// template is the configuration new members start from; dir holds their data dirs.
	template etcdserver.Config
	dir      string

	mu      sync.Mutex
	members []*Member
	ids     map[string]uint64
	named   int // members ever created, for the next one's name
	// drift sees every member's log for the v3 store found out of line with the v2 store.
	drift *driftWatch
	// changed tells of every start or stop of a member and every refill of a slot: what the
	// harness's loops wait on instead of polling.
	changed broadcast.Changes
}

// Changed is closed at the next start or stop of a member, or refill of a slot. Take it before
// looking at the members, so a change between the look and the wait is not missed.
func (c *Cluster) Changed() <-chan struct{} { return c.changed.Next() }

// driftMessages are what a member logs when it finds its v3 store's membership out of line
// with its v2 store's (etcdserver's reconcileMembership): among members of ours that never
// happens, so any is a failure.
var driftMessages = map[string]bool{"Syncing member in v3store": true, "Removing zombie member from v3store": true}

// driftWatch is a log handler that keeps the drift messages (with the logger's attributes: the
// member's name) in its sink and passes everything on.
type driftWatch struct {
	inner slog.Handler
	attrs []slog.Attr
	sink  *driftSink
}

type driftSink struct {
	mu   sync.Mutex
	seen []string
}

func (d *driftWatch) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || d.inner.Enabled(ctx, l)
}

func (d *driftWatch) Handle(ctx context.Context, r slog.Record) error {
	if driftMessages[r.Message] {
		d.sink.mu.Lock()
		d.sink.seen = append(d.sink.seen, fmt.Sprintf("%s %v", r.Message, d.attrs))
		d.sink.mu.Unlock()
	}
	if d.inner.Enabled(ctx, r.Level) {
		return d.inner.Handle(ctx, r)
	}
	return nil
}

func (d *driftWatch) WithAttrs(as []slog.Attr) slog.Handler {
	return &driftWatch{inner: d.inner.WithAttrs(as), attrs: append(append([]slog.Attr(nil), d.attrs...), as...), sink: d.sink}
}

func (d *driftWatch) WithGroup(name string) slog.Handler {
	return &driftWatch{inner: d.inner.WithGroup(name), attrs: d.attrs, sink: d.sink}
}

// Drifts are the drift messages the members logged.
func (c *Cluster) Drifts() []string {
	c.drift.sink.mu.Lock()
	defer c.drift.sink.mu.Unlock()
	return append([]string(nil), c.drift.sink.seen...)
}

// Members lists the members in their slots.
func (c *Cluster) Members() []*Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Member(nil), c.members...)
}

// Member is the member in slot i.
func (c *Cluster) Member(i int) *Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i]
}

// ClusterConfig shapes a simulated cluster.
type ClusterConfig struct {
	Size int
	Dir  string
	// TickMs and ElectionTicks are the raft timing (defaults 20 ms and 10).
	TickMs        uint
	ElectionTicks int
	// SnapshotCount is how often a member snapshots (default 300, so catch-up by snapshot and
	// WAL release happen within a short run).
	SnapshotCount uint64
	// Log receives the members' logs at info level (default: none).
	Log io.Writer
	// Level is the etcd line every member starts as (default: the newest the tree implements).
	Level version.Level
}

// NewCluster prepares and starts the members, and waits until each has published itself.
func NewCluster(ctx context.Context, net *Network, cc ClusterConfig) (*Cluster, error) {
	if cc.TickMs == 0 {
		cc.TickMs = 20
	}
	if cc.ElectionTicks == 0 {
		cc.ElectionTicks = 10
	}
	if cc.SnapshotCount == 0 {
		cc.SnapshotCount = 300
	}
	// The members' logs at info level when someone reads them (a failed seed's post-mortem);
	// otherwise none are formatted at all.
	handler := slog.Handler(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1}))
	if cc.Log != nil {
		handler = slog.NewJSONHandler(cc.Log, &slog.HandlerOptions{Level: slog.LevelInfo})
	}
	drift := &driftWatch{inner: handler, sink: &driftSink{}}
	c := &Cluster{Net: net, ids: map[string]uint64{}, log: slog.New(drift), dir: cc.Dir, drift: drift}
	c.template = etcdserver.Config{InitialClusterToken: "sim", NewCluster: true, TickMs: cc.TickMs, ElectionTicks: cc.ElectionTicks,
		SnapshotCount: cc.SnapshotCount, SnapshotCatchUpEntries: cc.SnapshotCount / 3, MaxRequestBytes: etcdserver.DefaultMaxRequestBytes,
		MaxTxnOps: etcdserver.DefaultMaxTxnOps, PreVote: true, StrictReconfigCheck: true,
		LeaseCheckpointInterval: etcdserver.DefaultLeaseCheckpointInterval, BackendBatchInterval: 20 * time.Millisecond,
		BackendBatchLimit: 1000, Level: cc.Level}
	initial := map[string][]string{}
	for i := 0; i < cc.Size; i++ {
		m := c.newMember(cc.Level)
		initial[m.Name] = []string{m.PeerURL}
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.cfg.InitialCluster = initial
		if err := os.MkdirAll(m.cfg.DataDir, 0o700); err != nil {
			return nil, err
		}
	}
	for _, m := range c.members {
		if err := c.start(m); err != nil {
			c.Close()
			return nil, err
		}
	}
	for _, m := range c.members {
		if err := waitReady(ctx, m); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// newMember names the next member and prepares its configuration (at level), without an
// initial cluster.
func (c *Cluster) newMember(level version.Level) *Member {
	c.mu.Lock()
	c.named++
	name := fmt.Sprintf("m%d", c.named)
	c.mu.Unlock()
	m := &Member{Name: name, PeerURL: fmt.Sprintf("http://%s.sim:2380", name), Disk: NewDisk()}
	m.cfg = c.template
	m.cfg.Name, m.cfg.DataDir, m.cfg.PeerURLs = name, filepath.Join(c.dir, name), []string{m.PeerURL}
	m.cfg.ClientURLs = []string{fmt.Sprintf("http://%s.sim:2379", name)}
	m.cfg.Peers, m.cfg.LeaseClock, m.cfg.WALDisk, m.cfg.Level = c.Net.For(m.PeerURL), m.clock.Now, m.Disk, level
	return m
}

// start opens the member on its data and starts its loops.
func (c *Cluster) start(m *Member) error {
	m.mu.Lock()
	cfg := m.cfg
	m.mu.Unlock()
	cfg.Logger = c.log.With("member", m.Name)
	cfg.Registry = prometheus.NewRegistry()
	srv, err := etcdserver.New(cfg)
	if err != nil {
		return fmt.Errorf("start %s: %w", m.Name, err)
	}
	c.Net.Serve(m.PeerURL, httpapi.PeerHandler(srv, srv.PeerHandler()))
	srv.Start()
	m.mu.Lock()
	m.srv = srv
	m.mu.Unlock()
	c.mu.Lock()
	c.ids[m.Name] = srv.ID()
	c.mu.Unlock()
	c.changed.Notify()
	return nil
}

func waitReady(ctx context.Context, m *Member) error {
	s := m.Server()
	if s == nil {
		return fmt.Errorf("%s is down", m.Name)
	}
	select {
	case <-s.ReadyNotify():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s did not publish itself: %w", m.Name, ctx.Err())
	}
}

// Stop takes a member down (its loops end, its files close).
func (c *Cluster) Stop(m *Member) {
	m.mu.Lock()
	s := m.srv
	m.srv = nil
	m.mu.Unlock()
	if s != nil {
		s.Stop()
		c.changed.Notify()
	}
}

// Crash cuts a member's power: its WAL loses what was not synced, and it stops (its loops end
// on the failed writes; what the database committed was already in the synced WAL).
func (c *Cluster) Crash(m *Member) {
	m.Disk.PowerOff()
	c.Stop(m)
}

// CrashTorn cuts a member's power in the middle of a write-back: its WAL keeps some of what was
// not synced, the last append torn at a sector (Disk.PowerOffTorn).
func (c *Cluster) CrashTorn(m *Member, rng *rand.Rand) error {
	err := m.Disk.PowerOffTorn(rng)
	c.Stop(m)
	return err
}

// Restart brings a stopped or crashed member back on its data (powering its disk on); it does not wait for the member to rejoin
// (a partition may keep it out for a while), WaitReady does.
func (c *Cluster) Restart(m *Member) error {
	if m.Server() != nil {
		return nil
	}
	m.mu.Lock()
	m.cfg.NewCluster = false
	m.mu.Unlock()
	m.Disk.PowerOn()
	return c.start(m)
}

// Swap stops a member and starts it again on its data as another level: an operator replacing
// its binary in place, during an upgrade or a downgrade.
func (c *Cluster) Swap(m *Member, to version.Level) error {
	c.Stop(m)
	m.mu.Lock()
	m.cfg.Level = to
	m.mu.Unlock()
	return c.Restart(m)
}

// Level is the etcd line the member runs (or last ran) as.
func (m *Member) Level() version.Level {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cfg.Level.IsZero() {
		return version.Local()
	}
	return m.cfg.Level
}

// WaitReady waits until every member runs and has published itself since its last start.
func (c *Cluster) WaitReady(ctx context.Context) error {
	for _, m := range c.Members() {
		if err := waitReady(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// Close stops every member and the network.
func (c *Cluster) Close() {
	for _, m := range c.Members() {
		c.Stop(m)
	}
	c.Net.Close()
}

// Up lists the running members.
func (c *Cluster) Up() []*Member {
	var up []*Member
	for _, m := range c.Members() {
		if m.Server() != nil {
			up = append(up, m)
		}
	}
	return up
}

// IDOf is a member's ID.
func (c *Cluster) IDOf(m *Member) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[m.Name]
}
