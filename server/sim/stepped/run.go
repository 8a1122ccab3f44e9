package stepped

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/pkg/judge"
	"etcdx/server/apply"
	"etcdx/server/compactor"
	"etcdx/server/lease"
	"etcdx/server/mvcc"
	"etcdx/server/version"
)

// Options is one run: the seed draws everything else.
type Options struct {
	Seed    uint64
	Members int // voters, 3 unless set
	Clients int // 3 unless set
	Steps   int // draws of the schedule, 3000 unless set
	// Diverge plants a bug: once the cluster has settled, one member's store takes a write
	// raft never ordered (the hash check must catch it).
	Diverge bool
	// FastLeaseClock plants a bug: the lessors' clock runs twice as fast as the cluster's, so
	// leases expire early (the lease-expired-early check must catch it).
	FastLeaseClock bool
	// NoExpiry plants a bug: leaders never revoke an expired lease (the lease-never-expired
	// check must catch it).
	NoExpiry bool
	// IndexFirst plants a bug: a member commits an entry's consistent index before the
	// entry's changes, so a crash in between loses them for good (the hash check must catch it).
	IndexFirst bool
}

// Result is what a run did, event by event, and what the checks found.
type Result struct {
	History  []byte
	Findings []judge.Finding
	// Failed says what kept the run from being judged whole (a cluster that never settled).
	Failed []string
	Acked  int // writes acknowledged to clients
}

// settleRounds bounds the quiet phase: rounds of delivering everything in flight and ticking
// every member, after which a healthy cluster has long agreed.
const settleRounds = 2000

// A member keeps a snapshot every snapshotEvery entries it applies and drops its log up to
// snapshotKeep entries before it (etcd's --snapshot-count and --experimental-snapshot-catchup-
// entries, scaled down so a run sends snapshots to members that fell behind).
const (
	snapshotEvery = 25
	snapshotKeep  = 5
)

// settleDeliveries bounds one settling round's deliveries.
const settleDeliveries = 10000

// cluster is the members, the messages in flight between them, and the clients.
type cluster struct {
	dir      string
	rng      *rand.Rand
	members  []*member
	inflight []raftpb.Message // sent and not yet delivered or lost, oldest first
	// bootstrap is every member's first disk: the first configuration at index 1.
	bootstrap raftpb.Snapshot
	clients   []*client
	nextID    uint64
	nextLease int64
	step      int
	// clock is the cluster's time: every member's ticks together move it one tick interval.
	// The lessors judge expiry by it, and the checks judge leases by it.
	clock time.Time
	ticks int
	// deleted is every member's sight of a lease's keys deleted by its revoke, by lease.
	deleted map[int64][]judge.LeaseDeletion
	// plants are the run's planted bugs.
	plants Options
	// gone are the members a committed change removed: what one reports no longer counts.
	gone map[uint64]bool
	// joined are the members a committed change (or the bootstrap) made part of the cluster.
	joined map[uint64]bool
	// versions is what each member reported of its versions, each time they changed.
	versions map[string][]judge.VersionSample
	hist     bytes.Buffer
	findings []judge.Finding
	failed   []string
}

// tickInterval is a tick's length (etcd's --heartbeat-interval); electionTimeout is raft's
// election ticks' length, by which a new leader's lessor extends every lease (as etcd's).
const (
	tickInterval    = 100 * time.Millisecond
	electionTimeout = 10 * tickInterval
)

// A leader looks for expired leases every expiryTicks ticks (lease.ExpiryCheck) and checkpoints
// remaining TTLs every checkpointTicks (etcd's 5 minutes, scaled to the leases' seconds).
const (
	expiryTicks     = int(lease.ExpiryCheck / tickInterval)
	checkpointTicks = 10
)

// The members start on the older binary and are upgraded, one at a time, to the newer; the
// leader raises the cluster version once every member runs the newer (version.Cluster.Decide).
var (
	olderBinary = version.Level{Major: 3, Minor: 6}
	newerBinary = version.Level{Major: 3, Minor: 7}
)

// compactPeriod is the history a leader's auto-compaction keeps (etcd's periodic mode, its
// retention scaled down); the rule is asked every compactTicks.
const compactPeriod = 5 * time.Second

// compactTicks is the rule's interval in ticks.
func compactTicks() int {
	return int((&compactor.Retention{Period: compactPeriod}).Interval() / tickInterval)
}

// versionTicks is how often the leader decides the cluster version (etcd's 1 s check).
const versionTicks = 10

// epoch is the cluster clock's start.
var epoch = time.Unix(1_000_000_000, 0).UTC()

func (c *cluster) now() time.Time { return c.clock }

// lessorNow is the clock the lessors judge expiry by: the cluster's, or with FastLeaseClock
// planted, one running twice as fast.
func (c *cluster) lessorNow() time.Time {
	if c.plants.FastLeaseClock {
		return c.clock.Add(c.clock.Sub(epoch))
	}
	return c.clock
}

// client makes one request at a time through a member it picks, and waits for that member to
// apply it; a member that goes down, or a wait past the client's patience, leaves the outcome
// unknown and the client moves on.
type client struct {
	n       int
	via     *member
	waiting uint64 // the request's id, 0 when idle
	op      string
	key     string
	value   string
	until   int // the step it gives up at
	seq     int
	ttl     time.Duration
	counter int64 // the mod revision its counter key had at its last answer
	seen    []judge.Seen
	acked   map[string]string // ledger key -> value, acknowledged
	// calledAt is when the request in flight was sent; lease is the lease it is about.
	calledAt time.Time
	lease    int64
	// leases are the leases the client was granted, with what the cluster acknowledged.
	leases map[int64]*judge.LeaseRecord
	// attached: a key of the client's is on the lease (the put was acknowledged).
	attached map[int64]bool
}

// patience is how many steps a client waits for its request's answer.
const patience = 400

// Run runs one seed's schedule on a fresh cluster in dir and judges it. Everything it draws comes
// from the seed and raft's election timeouts from crypto/rand, so two runs of one seed write the
// same history byte for byte when crypto/rand is seeded too (cryptotest.SetGlobalRandom).
func Run(dir string, o Options) (*Result, error) {
	if o.Members == 0 {
		o.Members = 3
	}
	if o.Clients == 0 {
		o.Clients = 3
	}
	if o.Steps == 0 {
		o.Steps = 3000
	}
	c := &cluster{dir: dir, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed)), clock: epoch,
		deleted: map[int64][]judge.LeaseDeletion{}, plants: o, versions: map[string][]judge.VersionSample{}, gone: map[uint64]bool{}, joined: map[uint64]bool{}}
	defer func() {
		for _, m := range c.members {
			m.close()
		}
	}()
	voters := make([]uint64, o.Members)
	for i := range voters {
		voters[i] = uint64(i + 1)
	}
	c.bootstrap = raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 1, Term: 1, ConfState: raftpb.ConfState{Voters: voters}}}
	for _, id := range voters {
		c.joined[id] = true
		m, err := c.newMember(id)
		if err != nil {
			return nil, err
		}
		c.members = append(c.members, m)
	}
	for i := 0; i < o.Clients; i++ {
		c.clients = append(c.clients, &client{n: i + 1, acked: map[string]string{}, leases: map[int64]*judge.LeaseRecord{}, attached: map[int64]bool{}})
	}
	c.logf("seed %d: %d members, %d clients, %d steps", o.Seed, o.Members, o.Clients, o.Steps)
	for c.step = 1; c.step <= o.Steps; c.step++ {
		if err := c.draw(); err != nil {
			return nil, err
		}
	}
	if err := c.settle(); err != nil {
		return nil, err
	}
	if err := c.expireLeases(); err != nil {
		return nil, err
	}
	if o.Diverge {
		live := c.live()
		m := live[c.rng.IntN(len(live))]
		c.logf("planted: %s writes /diverged outside raft", m.name)
		txn := m.kv.Write()
		if err := txn.Put([]byte("/diverged"), []byte("x"), 0); err != nil {
			return nil, err
		}
		if err := txn.End(); err != nil {
			return nil, err
		}
	}
	c.judge()
	res := &Result{History: c.hist.Bytes(), Findings: c.findings, Failed: c.failed}
	for _, cl := range c.clients {
		res.Acked += len(cl.acked)
	}
	return res, nil
}

func (c *cluster) logf(format string, args ...any) {
	fmt.Fprintf(&c.hist, "%05d ", c.step)
	fmt.Fprintf(&c.hist, format, args...)
	c.hist.WriteByte('\n')
}

// draw takes one step of the schedule: mostly messages delivered, ticks and client requests,
// and now and then a fault (a message lost, a member crashed or restarted, a member cut off or
// the links mended, a leadership transfer).
func (c *cluster) draw() error {
	switch r := c.rng.IntN(1000); {
	case r < 550:
		if len(c.inflight) > 0 {
			return c.deliver(c.rng.IntN(len(c.inflight)))
		}
		return c.tickAll()
	case r < 590:
		return c.tickAll()
	case r < 700:
		// One member's timer ahead of the others'.
		return c.tick(c.members[c.rng.IntN(len(c.members))])
	case r < 930:
		return c.act(c.clients[c.rng.IntN(len(c.clients))])
	case r < 950:
		if len(c.inflight) > 0 {
			i := c.rng.IntN(len(c.inflight))
			msg := c.inflight[i]
			c.inflight = append(c.inflight[:i], c.inflight[i+1:]...)
			c.lose(msg)
		}
	case r < 960:
		c.crashOne()
	case r < 970:
		return c.restartOne()
	case r < 975:
		return c.upgradeOne()
	case r < 987:
		c.partition()
	case r < 995:
		return c.transfer()
	default:
		return c.changeMembership()
	}
	return nil
}

// deliver hands the i'th message in flight to its receiver, or loses it if the receiver is down
// or either end is cut off.
func (c *cluster) deliver(i int) error {
	msg := c.inflight[i]
	c.inflight = append(c.inflight[:i], c.inflight[i+1:]...)
	to, from := c.member(msg.To), c.member(msg.From)
	if to == nil || !to.up() || to.isolated || from.isolated {
		c.lose(msg)
		return nil
	}
	c.logf("deliver %s", describe(msg))
	if msg.Type == raftpb.MsgSnap && from.up() {
		from.node.ReportSnapshot(msg.To, raft.SnapshotFinish)
	}
	if err := to.node.Step(msg); err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) {
		c.logf("%s refused it: %v", to.name, err)
	}
	return c.ready(to)
}

// newMember starts a member on a disk holding the bootstrap: the first configuration, at index 1.
func (c *cluster) newMember(id uint64) (*member, error) {
	m := &member{id: id, name: fmt.Sprintf("m%d", id), disk: raft.NewMemoryStorage(), now: c.lessorNow, indexFirst: c.plants.IndexFirst}
	m.path = filepath.Join(c.dir, m.name+".db")
	// A member added during an upgrade runs the newer binary.
	m.bin = olderBinary
	for _, x := range c.live() {
		if x.bin == newerBinary {
			m.bin = newerBinary
		}
	}
	if err := m.disk.ApplySnapshot(c.bootstrap); err != nil {
		return nil, fmt.Errorf("%s: bootstrap: %w", m.name, err)
	}
	if err := m.start(); err != nil {
		return nil, err
	}
	c.sample(m, false)
	return m, nil
}

func (c *cluster) lose(msg raftpb.Message) {
	c.logf("lose %s", describe(msg))
	// As etcd's transport tells raft: a leader whose snapshot was lost sends another.
	if from := c.member(msg.From); msg.Type == raftpb.MsgSnap && from.up() {
		from.node.ReportSnapshot(msg.To, raft.SnapshotFailure)
	}
}

// member is the member with id (ids are 1, 2, ... in the order members were made), or nil.
func (c *cluster) member(id uint64) *member {
	if id == 0 || id > uint64(len(c.members)) {
		return nil
	}
	return c.members[id-1]
}

// tick is one of a member's tick intervals: raft's tick, and the store's batch committed.
func (c *cluster) tick(m *member) error {
	if !m.up() {
		return nil
	}
	m.node.Tick()
	m.kv.StepCompaction()
	if err := m.be.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", m.name, err)
	}
	return c.ready(m)
}

// tickAll moves the clock one tick interval: every member ticks, and a leader runs its lease
// rounds when they are due.
func (c *cluster) tickAll() error {
	c.clock = c.clock.Add(tickInterval)
	c.ticks++
	for _, m := range c.members {
		if err := c.tick(m); err != nil {
			return err
		}
	}
	for _, m := range c.members {
		if m.up() && !m.leading && c.ticks%compactTicks() == 0 {
			m.compaction.Forget() // as etcd's compactor on a member that is not the leader
		}
		if !m.up() || !m.leading {
			continue
		}
		if c.ticks%expiryTicks == 0 && !c.plants.NoExpiry {
			for _, id := range m.les.Expired(1000) {
				c.propose(m, fmt.Sprintf("revoke expired lease %d", id), &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: id}})
			}
		}
		if c.ticks%versionTicks == 0 {
			c.decideVersion(m)
		}
		if c.ticks%compactTicks() == 0 {
			if at := m.compaction.Next(c.now(), m.kv.Rev(), m.kv.CompactRev()); at > 1 {
				c.propose(m, fmt.Sprintf("compact at %d", at), &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: at}})
			}
		}
		if c.ticks%checkpointTicks == 0 {
			if rem := m.les.Remaining(checkpointTicks * tickInterval); len(rem) > 0 {
				c.propose(m, fmt.Sprintf("checkpoint %d leases", len(rem)), &pb.InternalRaftRequest{LeaseCheckpoint: apply.Checkpoints(rem)})
			}
		}
		if err := c.ready(m); err != nil {
			return err
		}
	}
	return nil
}

// decideVersion is the leader's version round: each member of its configuration's binary level,
// as etcd's leader asks each for its version (one it cannot reach is unknown, and then nothing
// is decided), and the cluster version version.Cluster.Decide says to propose.
func (c *cluster) decideVersion(l *member) {
	cfg := l.node.Status().Config
	ids := append(slices.Collect(maps.Keys(cfg.Voters.IDs())), slices.Collect(maps.Keys(cfg.Learners))...)
	slices.Sort(ids)
	vc := version.Cluster{Version: l.cv}
	for _, id := range ids {
		vm := version.Member{ID: id}
		if x := c.member(id); x != nil && x.up() && (x == l || (!x.isolated && !l.isolated)) {
			vm.Version = x.bin.Full()
		}
		vc.Members = append(vc.Members, vm)
	}
	if d := vc.Decide(); !d.SetVersion.IsZero() && d.SetVersion != l.cv {
		c.propose(l, "set cluster version "+d.SetVersion.String(), &pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: d.SetVersion.Full()}})
	}
}

// sample records what a member reports of its versions now: its level, and with cluster its
// cluster version too (not while it has only just started: its store may be behind its log
// until it applies again).
func (c *cluster) sample(m *member, cluster bool) {
	if c.gone[m.id] || !c.joined[m.id] {
		return
	}
	v := judge.VersionSample{At: c.now().UnixNano(), Level: m.bin.String()}
	if cluster && !m.cv.IsZero() {
		v.Cluster = m.cv.String()
	}
	c.versions[m.name] = append(c.versions[m.name], v)
}

// upgradeOne swaps one member's older binary for the newer: the member stops (if up) and starts
// again on the same data.
func (c *cluster) upgradeOne() error {
	var older []*member
	for _, m := range c.live() {
		if m.bin != newerBinary {
			older = append(older, m)
		}
	}
	if len(older) == 0 {
		return nil
	}
	m := older[c.rng.IntN(len(older))]
	c.logf("upgrade %s to %s", m.name, newerBinary)
	if m.up() {
		c.stop(m)
	}
	m.bin = newerBinary
	return c.startMember(m)
}

// startMember starts a member that is down and says what it reports; a binary below the
// cluster version its data holds refuses to start, as etcd's does, and stays down.
func (c *cluster) startMember(m *member) error {
	if err := m.start(); errors.Is(err, errTooOld) {
		c.logf("%s refuses to start: its binary %s is below the cluster version its data holds", m.name, m.bin)
		return nil
	} else if err != nil {
		return err
	}
	c.sample(m, false)
	return c.ready(m)
}

// propose has a member propose a request of its own (no client waits for it); raft may drop it.
func (c *cluster) propose(m *member, what string, r *pb.InternalRaftRequest) {
	c.nextID++
	r.Header = &pb.RequestHeader{ID: c.nextID}
	data, err := r.Marshal()
	if err == nil {
		err = m.node.Propose(data)
	}
	if err != nil {
		c.logf("%s proposes to %s: dropped (%v)", m.name, what, err)
		return
	}
	c.logf("%s proposes to %s: request %d", m.name, what, c.nextID)
}

// ready does what raft asks of a member after each input: keep the log and hard state on disk
// before sending a message that promises them, then apply what is committed.
func (c *cluster) ready(m *member) error {
	for m.up() && m.node.HasReady() {
		rd := m.node.Ready()
		if rd.SoftState != nil {
			c.logf("%s is %s (leader %d)", m.name, rd.SoftState.RaftState, rd.SoftState.Lead)
			// As etcd: the leader's lessor judges expiry, every lease extended by an election
			// timeout; any other's does not.
			if lead := rd.SoftState.RaftState == raft.StateLeader; lead != m.leading {
				m.leading = lead
				if lead {
					m.les.Promote(electionTimeout)
				} else {
					m.les.Demote()
				}
			}
		}
		for _, rs := range rd.ReadStates {
			m.reads[binary.BigEndian.Uint64(rs.RequestCtx)] = rs.Index
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			c.logf("%s installs the snapshot at %d (configuration %s)", m.name, rd.Snapshot.Metadata.Index, confString(rd.Snapshot.Metadata.ConfState))
			if err := m.install(rd.Snapshot); err != nil {
				return err
			}
		}
		if err := m.disk.Append(rd.Entries); err != nil {
			return fmt.Errorf("%s: append: %w", m.name, err)
		}
		if !raft.IsEmptyHardState(rd.HardState) {
			if err := m.disk.SetHardState(rd.HardState); err != nil {
				return fmt.Errorf("%s: keep hard state: %w", m.name, err)
			}
		}
		for _, msg := range rd.Messages {
			if msg.Type == raftpb.MsgSnap {
				// As etcd: the snapshot a follower gets is the sender's state now, not the
				// older one its log was compacted at.
				snap, err := m.snapshot()
				if err != nil {
					return err
				}
				msg.Snapshot = &snap
			}
			c.inflight = append(c.inflight, msg)
		}
		for _, e := range rd.CommittedEntries {
			if e.Index <= m.applied {
				continue
			}
			a, err := m.applyEntry(e)
			if err != nil {
				return err
			}
			if a != nil {
				c.answered(m, e.Index, a)
			}
			if e.Type == raftpb.EntryConfChange {
				c.logf("%s applies %d: configuration %s", m.name, e.Index, m.node.Status().Config)
			}
			if cc := m.sawChange; cc != nil {
				// Committed: the member is in the cluster, or out of it, whether or not it
				// knows yet.
				if cc.Type == raftpb.ConfChangeRemoveNode {
					c.gone[cc.NodeID] = true
				} else {
					c.joined[cc.NodeID] = true
				}
				m.sawChange = nil
			}
		}
		m.node.Advance(rd)
		if !m.ready && m.applied >= m.readyAt {
			m.ready = true
			c.sample(m, true)
		}
		if err := c.renewConfirmed(m); err != nil {
			return err
		}
		if m.up() && m.applied >= m.snapped+snapshotEvery {
			c.logf("%s keeps a snapshot at %d", m.name, m.applied)
			if err := m.compact(snapshotKeep); err != nil {
				return err
			}
		}
		if m.removed {
			c.logf("%s was removed: it stops", m.name)
			c.stop(m)
		} else if m.up() && version.TooOld(m.bin, m.cv, version.DowngradeInfo{}) {
			// As etcd's version loop: a binary the cluster version has passed stops.
			c.logf("%s stops: its binary %s is below cluster version %s", m.name, m.bin, m.cv)
			c.stop(m)
		}
	}
	return nil
}

// stop takes a member down; its clients' requests end unknown.
func (c *cluster) stop(m *member) {
	m.crash()
	for _, cl := range c.clients {
		if cl.waiting != 0 && cl.via == m {
			c.logf("client %d loses request %d with %s: outcome unknown", cl.n, cl.waiting, m.name)
			cl.waiting = 0
		}
	}
}

// live is every member not removed, in id order.
func (c *cluster) live() []*member {
	var out []*member
	for _, m := range c.members {
		if !m.removed {
			out = append(out, m)
		}
	}
	return out
}

// leader is the up member raft calls leader, nil if none; with two (an old one not yet told),
// the later term's.
func (c *cluster) leader() *member {
	var l *member
	var term uint64
	for _, m := range c.members {
		if m.up() {
			if st := m.node.BasicStatus(); st.RaftState == raft.StateLeader && st.Term > term {
				l, term = m, st.Term
			}
		}
	}
	return l
}

// answered records a member's answer to a request, and hands it to the client waiting on that
// member for it. A revoke that deleted keys is a sight of its lease's expiry.
func (c *cluster) answered(m *member, index uint64, a *appliedReq) {
	if a.version && m.ready {
		c.sample(m, true)
	}
	if a.revoked != 0 {
		c.deleted[a.revoked] = append(c.deleted[a.revoked], judge.LeaseDeletion{At: c.now().UnixNano(), Rev: a.rev})
	}
	var cl *client
	for _, x := range c.clients {
		if x.waiting == a.id && x.via == m {
			cl = x
		}
	}
	rev, what := answer(a)
	c.logf("%s applies %d: request %d %s", m.name, index, a.id, what)
	if cl == nil {
		return
	}
	cl.waiting = 0
	if a.err != nil {
		return
	}
	if a.resp != nil {
		cl.seen = append(cl.seen, judge.Seen{Op: fmt.Sprintf("%s #%d", cl.op, a.id), Revision: rev})
	}
	switch cl.op {
	case "put":
		cl.acked[cl.key] = cl.value
	case "txn":
		t := a.resp.GetResponseTxn()
		if t.Succeeded {
			cl.counter = rev
		} else if kvs := t.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			cl.counter = kvs[0].ModRevision
		}
	case "grant":
		cl.leases[cl.lease] = &judge.LeaseRecord{TTL: cl.ttl, Kept: cl.calledAt.UnixNano()}
	case "attach":
		cl.attached[cl.lease] = true
	}
}

// answer is an applied request's header revision and a line describing its answer.
func answer(a *appliedReq) (int64, string) {
	if a.err != nil {
		return 0, "fails: " + a.err.Error()
	}
	if a.resp == nil {
		if a.compacted != 0 {
			return 0, fmt.Sprintf("compacted at %d", a.compacted)
		}
		if a.revoked != 0 {
			return a.rev, fmt.Sprintf("revoked lease %d at revision %d", a.revoked, a.rev)
		}
		return 0, "applied"
	}
	switch r := a.resp.Response.(type) {
	case *pb.ResponseOp_ResponsePut:
		return r.ResponsePut.Header.Revision, fmt.Sprintf("put at revision %d", r.ResponsePut.Header.Revision)
	case *pb.ResponseOp_ResponseDeleteRange:
		return r.ResponseDeleteRange.Header.Revision, fmt.Sprintf("deleted %d at revision %d", r.ResponseDeleteRange.Deleted, r.ResponseDeleteRange.Header.Revision)
	case *pb.ResponseOp_ResponseTxn:
		return r.ResponseTxn.Header.Revision, fmt.Sprintf("txn succeeded=%v at revision %d", r.ResponseTxn.Succeeded, r.ResponseTxn.Header.Revision)
	}
	return 0, "answered nothing"
}

// maxLeases bounds the leases a client is granted in a run.
const maxLeases = 4

// act: a waiting client gives up once its patience is spent; an idle one sends its next request
// through a member it draws (dropped at once if that member cannot propose). Its requests are
// puts to its ledger, a counter's compare-and-swap, deletes, and leases: grants, a key put on
// a lease, keep-alives.
func (c *cluster) act(cl *client) error {
	if cl.waiting != 0 {
		if c.step >= cl.until {
			c.logf("client %d gives up on request %d: outcome unknown", cl.n, cl.waiting)
			cl.waiting = 0
		}
		return nil
	}
	via := c.members[c.rng.IntN(len(c.members))]
	if !via.up() {
		return nil
	}
	cl.seq++
	r := &pb.InternalRaftRequest{}
	switch k := c.rng.IntN(20); {
	case k < 8:
		cl.op, cl.key, cl.value = "put", fmt.Sprintf("/ledger/c%d/%04d", cl.n, cl.seq), fmt.Sprintf("v%d", c.step)
		r.Put = &pb.PutRequest{Key: []byte(cl.key), Value: []byte(cl.value)}
	case k < 12:
		cl.op, cl.key = "txn", fmt.Sprintf("/counter/c%d", cl.n)
		key := []byte(cl.key)
		r.Txn = &pb.TxnRequest{
			Compare: []*pb.Compare{{Key: key, Target: pb.Compare_MOD, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_ModRevision{ModRevision: cl.counter}}},
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: key, Value: []byte(fmt.Sprint(cl.seq))}}}},
			Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: key}}}},
		}
	case k < 13:
		cl.op, cl.key = "delete", fmt.Sprintf("/scratch/c%d/", cl.n)
		r.DeleteRange = &pb.DeleteRangeRequest{Key: []byte(cl.key), RangeEnd: []byte(fmt.Sprintf("/scratch/c%d0", cl.n))}
	case k < 15:
		if len(cl.leases) >= maxLeases {
			return nil
		}
		c.nextLease++
		cl.op, cl.lease, cl.ttl = "grant", 0x100+c.nextLease, time.Duration(1+c.rng.IntN(3))*time.Second
		cl.key = fmt.Sprint(cl.lease)
		r.LeaseGrant = &pb.LeaseGrantRequest{ID: cl.lease, TTL: int64(cl.ttl / time.Second)}
	case k < 17:
		ids := slices.Sorted(maps.Keys(cl.leases))
		if len(ids) == 0 {
			return nil
		}
		cl.op, cl.lease = "attach", ids[c.rng.IntN(len(ids))]
		cl.key = fmt.Sprintf("/lease/c%d/%d", cl.n, cl.lease)
		r.Put = &pb.PutRequest{Key: []byte(cl.key), Value: []byte("held"), Lease: cl.lease}
	default:
		return c.keepAlive(cl, via)
	}
	c.nextID++
	r.Header = &pb.RequestHeader{ID: c.nextID}
	data, err := r.Marshal()
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	if err := via.node.Propose(data); err != nil {
		c.logf("client %d %s %s via %s: dropped (%v)", cl.n, cl.op, cl.key, via.name, err)
		return nil
	}
	cl.via, cl.waiting, cl.until, cl.calledAt = via, c.nextID, c.step+patience, c.now()
	c.logf("client %d %s %s via %s: request %d", cl.n, cl.op, cl.key, via.name, c.nextID)
	return c.ready(via)
}

// keepAlive sends a keep-alive of one of the client's leases, as etcd serves it: the member
// hands it to the leader it knows, which confirms its leadership with a read index, waits to
// have applied up to it, and renews the lease in its lessor.
func (c *cluster) keepAlive(cl *client, via *member) error {
	ids := slices.Sorted(maps.Keys(cl.leases))
	if len(ids) == 0 {
		return nil
	}
	cl.op, cl.lease = "keepalive", ids[c.rng.IntN(len(ids))]
	l := c.member(via.node.BasicStatus().Lead)
	if l == nil || !l.up() || (l != via && (l.isolated || via.isolated)) {
		c.logf("client %d keepalive %d via %s: no leader to send it to", cl.n, cl.lease, via.name)
		return nil
	}
	c.nextID++
	ctx := make([]byte, 8)
	binary.BigEndian.PutUint64(ctx, c.nextID)
	l.node.ReadIndex(ctx)
	cl.via, cl.waiting, cl.until, cl.calledAt = l, c.nextID, c.step+patience, c.now()
	c.logf("client %d keepalive %d via %s at %s: request %d", cl.n, cl.lease, l.name, l.name, c.nextID)
	return c.ready(l)
}

// renewConfirmed renews the leases whose keep-alives' read indexes the member has applied, if it
// still leads, and answers their clients.
func (c *cluster) renewConfirmed(m *member) error {
	ids := make([]uint64, 0, len(m.reads))
	for id, index := range m.reads {
		if index <= m.applied {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		delete(m.reads, id)
		var cl *client
		for _, x := range c.clients {
			if x.waiting == id && x.via == m {
				cl = x
			}
		}
		if cl == nil {
			continue
		}
		cl.waiting = 0
		if !m.leading {
			c.logf("%s refuses keepalive %d of lease %d: not the leader", m.name, id, cl.lease)
			continue
		}
		// Not waited on: a lease past its expiry is refused at once (its revoke is on its way).
		done, cancel := context.WithCancel(context.Background())
		cancel()
		ttl, checkpointed, err := m.les.Renew(done, cl.lease)
		if err != nil {
			c.logf("%s refuses keepalive %d of lease %d", m.name, id, cl.lease)
			continue
		}
		c.logf("%s renews lease %d for %d s: keepalive %d", m.name, cl.lease, ttl, id)
		if rec := cl.leases[cl.lease]; rec != nil {
			rec.Kept = cl.calledAt.UnixNano()
			rec.Renewals = append(rec.Renewals, rec.Kept)
		}
		if checkpointed {
			// As etcd: clear the checkpoint, or a later leader starts the lease from it.
			c.propose(m, fmt.Sprintf("clear lease %d's checkpoint", cl.lease),
				&pb.InternalRaftRequest{LeaseCheckpoint: &pb.LeaseCheckpointRequest{Checkpoints: []*pb.LeaseCheckpoint{{ID: cl.lease}}}})
		}
	}
	return nil
}

// crashOne takes a member down, while a majority of the live members stays up.
func (c *cluster) crashOne() {
	live := c.live()
	var up []*member
	for _, m := range live {
		if m.up() {
			up = append(up, m)
		}
	}
	if len(up) <= len(live)/2+1 {
		return
	}
	m := up[c.rng.IntN(len(up))]
	c.logf("crash %s", m.name)
	c.stop(m)
}

func (c *cluster) restartOne() error {
	var down []*member
	for _, m := range c.live() {
		if !m.up() {
			down = append(down, m)
		}
	}
	if len(down) == 0 {
		return nil
	}
	m := down[c.rng.IntN(len(down))]
	c.logf("restart %s", m.name)
	return c.startMember(m)
}

// partition cuts one member off from the rest, or mends every cut.
func (c *cluster) partition() {
	if c.rng.IntN(2) == 0 {
		c.mend()
		return
	}
	m := c.members[c.rng.IntN(len(c.members))]
	m.isolated = true
	c.logf("cut %s off", m.name)
}

func (c *cluster) mend() {
	for _, m := range c.members {
		m.isolated = false
	}
	c.logf("mend all links")
}

func confString(cs raftpb.ConfState) string {
	return fmt.Sprintf("voters=%v learners=%v", cs.Voters, cs.Learners)
}

func sortedIDs(set map[uint64]struct{}) []uint64 {
	out := make([]uint64, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// maxMembers bounds the members a run makes (each replacement makes one).
const maxMembers = 6

// changeMembership makes one step of replacing a member by a learner, through the leader:
// promote the learner there is, or else remove a voter (not the leader) or add a learner. Raft
// takes one change at a time; a proposal it drops is logged and the next draw tries again.
func (c *cluster) changeMembership() error {
	l := c.leader()
	if l == nil {
		return nil
	}
	cfg := l.node.Status().Config
	var cc raftpb.ConfChange
	switch learners, voters := sortedIDs(cfg.Learners), sortedIDs(cfg.Voters.IDs()); {
	case len(learners) > 0:
		cc = raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: learners[c.rng.IntN(len(learners))]}
	case len(voters) >= 3 && c.rng.IntN(2) == 0:
		var others []uint64
		for _, id := range voters {
			if id != l.id {
				others = append(others, id)
			}
		}
		cc = raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode, NodeID: others[c.rng.IntN(len(others))]}
	case len(c.members) < maxMembers:
		// The new member starts from the bootstrap (the snapshot at index 1, which no member
		// compacts past) and takes every entry after it from the leader, its own addition
		// among them.
		m, err := c.newMember(uint64(len(c.members) + 1))
		if err != nil {
			return err
		}
		c.members = append(c.members, m)
		cc = raftpb.ConfChange{Type: raftpb.ConfChangeAddLearnerNode, NodeID: m.id}
	default:
		return nil
	}
	if err := l.node.ProposeConfChange(cc); err != nil {
		c.logf("%s proposes %s %d: dropped (%v)", l.name, cc.Type, cc.NodeID, err)
		return nil
	}
	c.logf("%s proposes %s %d", l.name, cc.Type, cc.NodeID)
	return c.ready(l)
}

// transfer asks the leader, if one is up, to hand leadership to another live member.
func (c *cluster) transfer() error {
	l := c.leader()
	if l == nil {
		return nil
	}
	live := c.live()
	to := live[c.rng.IntN(len(live))]
	c.logf("%s transfers leadership to %s", l.name, to.name)
	l.node.TransferLeader(to.id)
	return c.ready(l)
}

// settle ends the faults (every link mended, every live member up) and runs the cluster until
// every member of the configuration has applied everything committed, nothing is left to
// commit, and every client has its answer. A member outside the configuration then (removed
// while it could not hear of it, or added by a change raft dropped) stops.
func (c *cluster) settle() error {
	c.logf("settle: mend all links, restart every member")
	c.mend()
	for _, m := range c.live() {
		if !m.up() {
			if err := c.startMember(m); err != nil {
				return err
			}
		}
		if !m.up() {
			// It refused its binary: the operator swaps in the newer.
			m.bin = newerBinary
			if err := c.startMember(m); err != nil {
				return err
			}
		}
	}
	for round := 0; round < settleRounds; round++ {
		// Bounded: members that answer each other without end (no tick needed) would
		// otherwise keep this round going for ever.
		for n := 0; len(c.inflight) > 0 && n < settleDeliveries; n++ {
			if err := c.deliver(0); err != nil {
				return err
			}
		}
		if in, ok := c.settled(); ok {
			c.logf("settled after %d rounds", round)
			for _, m := range c.live() {
				if !in[m.id] {
					c.logf("%s is not in the configuration: it stops", m.name)
					m.removed = true
					c.stop(m)
				}
			}
			return nil
		}
		if err := c.tickAll(); err != nil {
			return err
		}
		c.step++
	}
	c.failed = append(c.failed, fmt.Sprintf("the cluster did not settle within %d rounds", settleRounds))
	c.logf("did not settle")
	return nil
}

// expireRounds is how long the run goes on, with no client left, for every lease to expire:
// far past the longest TTL, a new leader's extension and a round of the leader's expiry check.
const expireRounds = 100

// expireLeases runs the settled cluster for expireRounds more ticks, with every link up, and
// settles it again: no lease has keep-alives any more, so none may still hold a key then.
func (c *cluster) expireLeases() error {
	c.logf("expire: %d more ticks with no keep-alives", expireRounds)
	for round := 0; round < expireRounds; round++ {
		for n := 0; len(c.inflight) > 0 && n < settleDeliveries; n++ {
			if err := c.deliver(0); err != nil {
				return err
			}
		}
		if err := c.tickAll(); err != nil {
			return err
		}
		c.step++
	}
	if err := c.settle(); err != nil {
		return err
	}
	for _, m := range c.live() {
		if !m.up() {
			continue
		}
		txn := m.kv.Read()
		res, err := txn.Range([]byte("/lease/"), []byte("/lease0"), mvcc.RangeOptions{})
		txn.End()
		if err != nil {
			return fmt.Errorf("%s: read the leases' keys: %w", m.name, err)
		}
		for _, kv := range res.KVs {
			c.findings = append(c.findings, judge.Finding{Check: judge.LeaseNeverExpired,
				Detail: fmt.Sprintf("%s: still holds %s on lease %d, %v after the last keep-alive", m.name, kv.Key, kv.Lease, time.Duration(expireRounds)*tickInterval)})
		}
	}
	return nil
}

// settled: a leader with nothing uncommitted, every member of its configuration applied through
// its commit index; it returns the configuration's members. Clients still waiting then wait on
// a request raft dropped: they give up.
func (c *cluster) settled() (map[uint64]bool, bool) {
	l := c.leader()
	if l == nil {
		return nil, false
	}
	st := l.node.Status()
	last, err := l.disk.LastIndex()
	if err != nil || last != st.Commit {
		return nil, false
	}
	in := map[uint64]bool{}
	for id := range st.Config.Voters.IDs() {
		in[id] = true
	}
	for id := range st.Config.Learners {
		in[id] = true
	}
	for _, m := range c.members {
		if in[m.id] && (!m.up() || m.applied != st.Commit) {
			return nil, false
		}
	}
	for _, cl := range c.clients {
		if cl.waiting != 0 {
			c.logf("client %d gives up on request %d: outcome unknown", cl.n, cl.waiting)
			cl.waiting = 0
		}
	}
	return in, true
}

// judge runs the shared checks: acknowledged writes on every member of the configuration, each ledger key written
// once, revisions per client, equal hashes.
func (c *cluster) judge() {
	acked := map[string]string{}
	seen := map[int][]judge.Seen{}
	for _, cl := range c.clients {
		for k, v := range cl.acked {
			acked[k] = v
		}
		seen[cl.n] = cl.seen
	}
	hashes := map[string]judge.MemberHash{}
	for _, m := range c.live() {
		have, recs := ledger(m.kv)
		c.findings = append(c.findings, prefixed(m.name, judge.LostWriteFindings(acked, have))...)
		c.findings = append(c.findings, judge.WrittenOnce(m.name, recs)...)
		h, _, rev, compact, err := m.kv.HashKV(0)
		if err != nil {
			c.findings = append(c.findings, judge.Finding{Check: judge.HashMismatch, Detail: fmt.Sprintf("%s: hash: %v", m.name, err)})
			continue
		}
		hashes[m.name] = judge.MemberHash{Hash: h, Revision: rev, CompactRevision: compact}
		c.logf("%s: revision %d, hash %d, %d ledger keys", m.name, rev, h, len(have))
	}
	c.findings = append(c.findings, judge.Monotonic(seen)...)
	c.findings = append(c.findings, judge.Hashes(hashes)...)
	leases := map[int64]judge.LeaseRecord{}
	for _, cl := range c.clients {
		for id, rec := range cl.leases {
			leases[id] = *rec
		}
	}
	for _, m := range c.live() {
		c.sample(m, true)
	}
	for _, name := range slices.Sorted(maps.Keys(c.versions)) {
		c.findings = append(c.findings, judge.ClusterVersions(name, c.versions[name], nil)...)
	}
	c.findings = append(c.findings, judge.ClusterVersionsAcross(c.versions, nil)...)
	for _, m := range c.live() {
		c.logf("%s runs %s, cluster version %s", m.name, m.bin, m.cv)
	}
	lf, expired := judge.Leases(leases, c.deleted)
	c.findings = append(c.findings, lf...)
	c.logf("%d leases granted, %d seen to expire", len(leases), expired)
	for _, f := range c.findings {
		c.logf("finding %s", f)
	}
}

func prefixed(name string, fs []judge.Finding) []judge.Finding {
	for i := range fs {
		fs[i].Detail = name + ": " + fs[i].Detail
	}
	return fs
}

// ledger is what a member's store holds under /ledger/.
func ledger(kv *mvcc.Store) (map[string]string, []judge.Record) {
	txn := kv.Read()
	defer txn.End()
	res, err := txn.Range([]byte("/ledger/"), []byte("/ledger0"), mvcc.RangeOptions{})
	if err != nil {
		return nil, nil
	}
	have := map[string]string{}
	recs := make([]judge.Record, 0, len(res.KVs))
	for _, kv := range res.KVs {
		have[string(kv.Key)] = string(kv.Value)
		recs = append(recs, judge.Record{Key: string(kv.Key), Version: kv.Version, Create: kv.CreateRevision, ModRevision: kv.ModRevision})
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Key < recs[j].Key })
	return have, recs
}

// describe is a message in one line, with what decides raft's behaviour.
func describe(m raftpb.Message) string {
	s := fmt.Sprintf("%d->%d %s term %d", m.From, m.To, m.Type, m.Term)
	switch m.Type {
	case raftpb.MsgApp, raftpb.MsgAppResp, raftpb.MsgVote, raftpb.MsgPreVote, raftpb.MsgSnap:
		s += fmt.Sprintf(" index %d logterm %d", m.Index, m.LogTerm)
	}
	if len(m.Entries) > 0 {
		s += fmt.Sprintf(" entries %d", len(m.Entries))
	}
	if m.Snapshot != nil {
		s += fmt.Sprintf(" snapshot %d", m.Snapshot.Metadata.Index)
	}
	if m.Commit > 0 {
		s += fmt.Sprintf(" commit %d", m.Commit)
	}
	if m.Reject {
		s += " reject"
	}
	return s
}
