// Package sim runs a whole cluster of our members inside one process: each member is the real
// etcdserver (raft, WAL, applier, MVCC, lessor, version loop, storage in its own directory), and
// they talk over an in-memory network (Network) whose faults, partitions and member restarts
// are drawn from one seed (Run). Checks judge the recorded history: linearizability (porcupine),
// acknowledged writes, revisions, watches, equal hashes, the cluster version.
//
// What a seed replays: the fault schedule, the client operations and every fault draw are
// exactly the seed's. Go's scheduler and the members' real-time timers are not: the order in
// which goroutines interleave, and so which messages a fault hits, can differ between two runs
// of the same seed (docs/architecture.md).
package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"etcdx/server/etcdserver"
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

// Cluster is N members bootstrapped together on one Network.
type Cluster struct {
	Net     *Network
	Members []*Member
	ids     map[string]uint64
	log     *slog.Logger
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
	c := &Cluster{Net: net, ids: map[string]uint64{}, log: slog.New(handler)}
	initial := map[string][]string{}
	for i := 1; i <= cc.Size; i++ {
		name := fmt.Sprintf("m%d", i)
		m := &Member{Name: name, PeerURL: fmt.Sprintf("http://%s.sim:2380", name), Disk: NewDisk()}
		initial[name] = []string{m.PeerURL}
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.cfg = etcdserver.Config{Name: m.Name, DataDir: filepath.Join(cc.Dir, m.Name), PeerURLs: []string{m.PeerURL},
			ClientURLs: []string{fmt.Sprintf("http://%s.sim:2379", m.Name)}, InitialCluster: initial, InitialClusterToken: "sim",
			NewCluster: true, TickMs: cc.TickMs, ElectionTicks: cc.ElectionTicks, SnapshotCount: cc.SnapshotCount,
			SnapshotCatchUpEntries: cc.SnapshotCount / 3, MaxRequestBytes: etcdserver.DefaultMaxRequestBytes,
			MaxTxnOps: etcdserver.DefaultMaxTxnOps, PreVote: true, StrictReconfigCheck: true,
			LeaseCheckpointInterval: etcdserver.DefaultLeaseCheckpointInterval, BackendBatchInterval: 20 * time.Millisecond,
			BackendBatchLimit: 1000, Peers: net.For(m.PeerURL), LeaseClock: m.clock.Now, WALDisk: m.Disk}
		if err := os.MkdirAll(m.cfg.DataDir, 0o700); err != nil {
			return nil, err
		}
	}
	for _, m := range c.Members {
		if err := c.start(m); err != nil {
			c.Close()
			return nil, err
		}
	}
	for _, m := range c.Members {
		if err := waitReady(ctx, m); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// start opens the member on its data and starts its loops.
func (c *Cluster) start(m *Member) error {
	cfg := m.cfg
	cfg.Logger = c.log.With("member", m.Name)
	cfg.Registry = prometheus.NewRegistry()
	srv, err := etcdserver.New(cfg)
	if err != nil {
		return fmt.Errorf("start %s: %w", m.Name, err)
	}
	c.Net.Serve(m.PeerURL, srv.PeerHandler())
	srv.Start()
	m.mu.Lock()
	m.srv = srv
	m.mu.Unlock()
	c.ids[m.Name] = srv.ID()
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
	}
}

// Crash cuts a member's power: its WAL loses what was not synced, and it stops (its loops end
// on the failed writes; what the database committed was already in the synced WAL).
func (c *Cluster) Crash(m *Member) {
	m.Disk.PowerOff()
	c.Stop(m)
}

// Restart brings a stopped or crashed member back on its data (powering its disk on); it does not wait for the member to rejoin
// (a partition may keep it out for a while), WaitReady does.
func (c *Cluster) Restart(m *Member) error {
	if m.Server() != nil {
		return nil
	}
	m.cfg.NewCluster = false
	m.Disk.PowerOn()
	return c.start(m)
}

// WaitReady waits until every member runs and has published itself since its last start.
func (c *Cluster) WaitReady(ctx context.Context) error {
	for _, m := range c.Members {
		if err := waitReady(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// Close stops every member and the network.
func (c *Cluster) Close() {
	for _, m := range c.Members {
		c.Stop(m)
	}
	c.Net.Close()
}

// Up lists the running members.
func (c *Cluster) Up() []*Member {
	var up []*Member
	for _, m := range c.Members {
		if m.Server() != nil {
			up = append(up, m)
		}
	}
	return up
}

// IDOf is a member's ID.
func (c *Cluster) IDOf(m *Member) uint64 { return c.ids[m.Name] }
