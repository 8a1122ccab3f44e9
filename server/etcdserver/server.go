package etcdserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.opentelemetry.io/otel/trace"

	"etcdx/pkg/buildinfo"
	"etcdx/server/auth"
	"etcdx/server/backend"
	"etcdx/server/features"
	"etcdx/server/lease"
	"etcdx/server/logutil"
	"etcdx/server/membership"
	"etcdx/server/mvcc"
	"etcdx/server/schema"
	"etcdx/server/snap"
	"etcdx/server/transport"
	"etcdx/server/version"
	"etcdx/server/wal"
)

// Errors with upstream's wording; the gRPC layer maps them to upstream's status codes.
var (
	ErrStopped         = errors.New("etcdserver: server stopped")
	ErrTimeout         = errors.New("etcdserver: request timed out")
	ErrNoLeader        = errors.New("etcdserver: no leader")
	ErrRequestTooLarge = errors.New("etcdserver: request is too large")
	ErrNoSpace         = errors.New("etcdserver: mvcc: database space exceeded")
	ErrKeyNotFound     = errors.New("etcdserver: key not found")
	ErrTooManyOps      = errors.New("etcdserver: too many operations in txn request")
	ErrDuplicateKey    = errors.New("etcdserver: duplicate key given in txn request")
	ErrNotLeader       = errors.New("etcdserver: not leader")
	ErrCorrupt         = errors.New("etcdserver: corrupt cluster")
	ErrTooManyRequests = errors.New("etcdserver: too many requests")
	// ErrTimeoutWaitAppliedIndex: a leader renewing a lease waited too long for its applied
	// index to reach what was committed.
	ErrTimeoutWaitAppliedIndex = errors.New("etcdserver: request timed out, waiting for the applied index took too long")
)

// Server is one member.
type Server struct {
	cfg Config
	log *slog.Logger

	id  uint64
	be  *backend.Backend
	kv  *mvcc.Store
	les *lease.Lessor
	mem *membership.Membership
	// auth holds users, roles and tokens (the auth buckets, in memory).
	auth *auth.Store

	node    raft.Node
	storage *raft.MemoryStorage
	wal     *wal.WAL
	m       *metrics
	// tr carries raft messages to peers; peerClient forwards lease calls to the leader.
	tr         *transport.Transport
	peerClient *http.Client
	// heartbeats notices a leader that sends heartbeats late (raft loop only).
	heartbeats heartbeatDetector
	// restarted: the member started from its own data (not bootstrapped or joining now).
	restarted bool

	reqIDs   *idGenerator
	waits    *waitRegistry
	applyW   indexWaiter
	alarms   *alarmStore
	applyc   chan applyBatch
	readc    chan raft.ReadState
	readWake chan struct{}

	readMu       sync.Mutex
	readNotifier *notifier

	appliedIndex   atomic.Uint64
	committedIndex atomic.Uint64
	term           atomic.Uint64
	lead           atomic.Uint64
	snapIndex      uint64 // the latest snapshot on disk; owned by the apply goroutine
	// memSnapIndex is the latest snapshot in the raft log's memory (at least snapIndex), which
	// lets the log be trimmed (snapshotDue); memSnapBytes is the entry data applied since it.
	// Both are owned by the apply goroutine.
	memSnapIndex uint64
	memSnapBytes uint64
	// snapshotsInFlight counts databases being sent to followers; the raft log is not trimmed
	// meanwhile, so a follower that receives one still finds the entries that followed it.
	snapshotsInFlight atomic.Int64
	// snapJobs carries the apply goroutine's snapshots to the goroutine that writes them to
	// disk (snapshotSaver).
	snapJobs chan snapJob
	// snapFileMu orders the writing of snapshot files and WAL snapshot records; savedSnapIndex
	// is the newest written, under it.
	snapFileMu     sync.Mutex
	savedSnapIndex uint64
	appliedTerm    uint64 // term of the last applied entry; owned by the apply goroutine
	msgSnapC       chan raftpb.Message
	confState      raftpb.ConfState
	// replayMem is the membership as of the last replayed entry (see replayApplied).
	replayMem *membership.Membership
	// forceSnapshot asks the apply loop for a raft snapshot after the current batch (set, and
	// read, by the apply goroutine only).
	forceSnapshot bool
	// peerVers are the versions of members that publish none (upstream's), as the leader polled them.
	peerVers peerVersions
	// removedSelf is set once this member applied its own removal.
	removedSelf atomic.Bool
	// initialPeers are the members known at start; the transport streams to them.
	initialPeers []membership.Member
	// replayedTo is the consistent index found in the database at start: entries up to it are
	// already applied and only their conf changes are replayed into raft.
	replayedTo uint64

	// vers holds the cluster version, downgrade info and storage version; versionWake nudges
	// the loop that decides them.
	vers        *versionState
	versionWake chan struct{}
	// leaders wakes proposals that raft dropped while leadership was moving.
	leaders *leaderWatch
	// remoteProposals counts proposals forwarded by peers that are still being handed to raft.
	remoteProposals sync.WaitGroup

	// draining closes when the member stops taking client work; long-lived streams end on it.
	draining  chan struct{}
	drainOnce sync.Once
	fatalOnce sync.Once
	stopping  chan struct{}
	done      chan struct{}
	// ready closes once this member has published itself through raft (upstream's ReadyNotify).
	ready    chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

type applyBatch struct {
	ents []raftpb.Entry
	snap raftpb.Snapshot
	// applied is closed when the batch is applied; the raft loop waits on it for conf changes.
	applied chan struct{}
}

// New opens or bootstraps the member in cfg.DataDir. Call Start to run it.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	lg := cfg.Logger
	if err := os.MkdirAll(cfg.snapDir(), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	s := &Server{cfg: cfg, log: lg, waits: newWaitRegistry(), applyc: make(chan applyBatch, 128),
		readc: make(chan raft.ReadState, 16), msgSnapC: make(chan raftpb.Message, 16), snapJobs: make(chan snapJob, 1), readWake: make(chan struct{}, 1), readNotifier: newNotifier(), leaders: newLeaderWatch(), versionWake: make(chan struct{}, 1),
		draining: make(chan struct{}), stopping: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{})}
	// Asked for a start-up corruption check, the database's page tree is walked before bbolt
	// reads it: a damaged tree (a page that points at its ancestor) would otherwise loop in the
	// first read for ever, with nothing in the log.
	if cfg.Features.Enabled(features.InitialCorruptCheck) {
		if _, err := os.Stat(cfg.BackendPath()); err == nil {
			if err := backend.VerifyFile(cfg.BackendPath()); err != nil {
				return nil, fmt.Errorf("initial corruption check: %w", err)
			}
		}
	}
	var err error
	s.be, err = backend.Open(backend.Config{Path: cfg.BackendPath(), Buckets: schema.Buckets, Logger: lg,
		BatchInterval: cfg.BackendBatchInterval, BatchLimit: cfg.BackendBatchLimit,
		FreelistType: cfg.BackendFreelistType, UnsafeNoSync: cfg.UnsafeNoFsync})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		if s.wal != nil {
			s.wal.Close()
		}
		if s.kv != nil {
			s.kv.Close()
		}
		s.be.Close()
		return nil, err
	}
	if s.vers, err = loadVersionState(s.be); err != nil {
		return fail(err)
	}
	if wal.Exist(cfg.walDir()) {
		cluster, dg, storage := s.vers.get()
		if err := version.CheckStart(buildinfo.Version, storage, cluster, dg, cfg.DataDir); err != nil {
			return fail(err)
		}
	}
	minTTL := int64((3*cfg.ElectionTicks)/2) * int64(cfg.TickMs) / 1000
	if rem := (int64((3*cfg.ElectionTicks)/2) * int64(cfg.TickMs)) % 1000; rem != 0 {
		minTTL++
	}
	if s.les, err = lease.New(s.be, minTTL); err != nil {
		return fail(err)
	}
	if s.kv, err = mvcc.Open(s.be, lg, s.les); err != nil {
		return fail(err)
	}
	s.kv.SetCompactionPace(cfg.CompactionBatchLimit, cfg.CompactionSleepInterval)
	if s.alarms, err = loadAlarms(s.be); err != nil {
		return fail(err)
	}
	if err := s.openAuth(); err != nil {
		return fail(err)
	}
	if err := s.maybeDefragAtStart(); err != nil {
		return fail(err)
	}
	if err := s.alignStorage(); err != nil {
		return fail(err)
	}
	s.storage = raft.NewMemoryStorage()
	rcfg := &raft.Config{
		ElectionTick:    cfg.ElectionTicks,
		HeartbeatTick:   1,
		Storage:         s.storage,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 512,
		CheckQuorum:     true,
		PreVote:         cfg.PreVote,
		Logger:          raftLogger{lg.With("component", "raft")},
	}
	if wal.Exist(cfg.walDir()) {
		s.restarted = true
		if cfg.Discover != nil {
			lg.Warn("discovery token is ignored since cluster already initialized; valid logs are found", "wal-dir", cfg.walDir())
		}
		err = s.restart(rcfg)
	} else {
		err = s.bootstrap(rcfg)
	}
	if err != nil {
		return fail(err)
	}
	s.wal.SetMaxFiles(cfg.MaxWals)
	if cfg.UnsafeNoFsync {
		s.wal.SetUnsafeNoSync()
	}
	s.tr = transport.New(transport.Config{ID: s.id, ClusterID: s.mem.ClusterID(), ServerVersion: buildinfo.Version,
		MinClusterVersion: version.MinClusterVersion(version.Local()), Raft: s, Logger: lg.With("component", "transport"), TLS: cfg.PeerTLS, LocalAddr: cfg.PeerLocalAddr,
		ReadTimeout: cfg.PeerReadTimeout, WriteTimeout: cfg.PeerWriteTimeout, URLs: cfg.PeerURLs, OnRemoved: s.removedByPeer})
	s.peerClient = cfg.peerHTTPClient(10 * time.Second)
	for _, m := range s.initialPeers {
		s.tr.AddPeer(m.ID, m.PeerURLs)
	}
	s.reqIDs = newIDGenerator(s.id, time.Now())
	s.m = newMetrics(cfg.Registry, s)
	s.wal.SetObserver(walMetrics{s.m})
	s.m.serverID.WithLabelValues(fmt.Sprintf("%x", s.id)).Set(1)
	s.m.setClusterVersion(s.ClusterVersion())
	s.m.quotaBytes.Set(float64(cfg.QuotaBackendBytes))
	s.log.Info("starting etcd server", "local-member-id", fmt.Sprintf("%x", s.id), "local-server-version", buildinfo.Version,
		"cluster-id", fmt.Sprintf("%x", s.ClusterID()), "cluster-version", s.ClusterVersion().String())
	return s, nil
}

func (s *Server) bootstrap(rcfg *raft.Config) error {
	if s.cfg.NewCluster && s.cfg.Discover != nil {
		s.log.Info("bootstrapping cluster using v3 discovery")
		ic, err := s.cfg.Discover(context.Background(), membership.MemberID(s.cfg.PeerURLs, s.cfg.InitialClusterToken))
		if err != nil {
			return &DiscoveryError{Op: "join", Err: err}
		}
		s.cfg.InitialCluster = ic
	}
	cfg := s.cfg
	if !cfg.NewCluster {
		return s.joinExisting(rcfg)
	}
	in, err := membership.NewInitial(cfg.Name, cfg.PeerURLs, cfg.InitialCluster, cfg.InitialClusterToken)
	if err != nil {
		return err
	}
	peers := make([]raft.Peer, 0, len(in.Members))
	for _, m := range in.Members {
		ctx, err := membership.ConfChangeContext(m)
		if err != nil {
			return err
		}
		peers = append(peers, raft.Peer{ID: m.ID, Context: ctx})
	}
	s.initialPeers = in.Members
	s.id = in.SelfID
	cid := in.ClusterID
	w, err := wal.Create(cfg.walDir(), schema.WALMetadata{NodeID: s.id, ClusterID: cid}.Encode())
	if err != nil {
		return err
	}
	s.wal = w
	if s.mem, err = membership.Load(s.be, cid); err != nil {
		return err
	}
	rcfg.ID = s.id
	s.node = raft.StartNode(rcfg, peers)
	s.log.Info("bootstrapped new cluster", "member-id", fmt.Sprintf("%x", s.id), "cluster-id", fmt.Sprintf("%x", cid))
	return nil
}

// setAsideBrokenSnap renames a snap file that does not load to <name>.broken, with upstream's
// log lines: the bytes stay for a post-mortem, and the next start and etcdutl pass it over.
func (s *Server) setAsideBrokenSnap(path string, err error) {
	broken := path + ".broken"
	s.log.Warn("failed to read a snap file", "path", path, "error", err)
	if rerr := os.Rename(path, broken); rerr != nil {
		s.log.Warn("failed to rename a broken snap file", "path", path, "broken-path", broken, "error", rerr)
		return
	}
	s.log.Warn("renamed to a broken snap file", "path", path, "broken-path", broken)
}

func (s *Server) restart(rcfg *raft.Config) error {
	cfg := s.cfg
	snaps, err := snap.List(cfg.snapDir())
	if err != nil {
		return err
	}
	// Use the newest snapshot whose marker made it into the WAL.
	var sn raftpb.Snapshot
	var md []byte
	var st raftpb.HardState
	var ents []raftpb.Entry
	opened := false
	for _, path := range append(snaps, "") {
		sn = raftpb.Snapshot{}
		if path != "" {
			if sn, err = snap.Load(path); err != nil {
				s.setAsideBrokenSnap(path, err)
				continue
			}
		}
		w, err := wal.Open(cfg.walDir(), sn.Metadata)
		if err != nil {
			return err
		}
		md, st, ents, err = w.ReadAll()
		if errors.Is(err, wal.ErrSnapshotNotFound) && path != "" {
			w.Close()
			continue
		}
		if err != nil {
			w.Close()
			return fmt.Errorf("read WAL %s: %w", cfg.walDir(), err)
		}
		if r := w.Repaired(); r != nil {
			// Upstream's line, with where the cut was made and why.
			s.log.Info("repaired WAL", "path", r.Path, "offset", r.Offset, "error", r.Reason, "broken-copy", r.Path+".broken")
		}
		s.wal = w
		opened = true
		break
	}
	if !opened {
		return fmt.Errorf("no usable snapshot matches the WAL in %s", cfg.walDir())
	}
	meta, err := schema.DecodeWALMetadata(md)
	if err != nil {
		return fmt.Errorf("WAL metadata in %s: %w", cfg.walDir(), err)
	}
	s.id = meta.NodeID
	if s.mem, err = membership.Load(s.be, meta.ClusterID); err != nil {
		return err
	}
	s.initialPeers = s.mem.List()
	cindex, _ := s.consistentIndex()
	s.replayMem = membership.FromState(membership.State{})
	if !raft.IsEmptySnap(sn) {
		st, _, err := membership.DecodeV2Store(sn.Data)
		if err != nil {
			return fmt.Errorf("membership in snapshot %d: %w", sn.Metadata.Index, err)
		}
		s.replayMem = membership.FromState(st)
		if cindex < sn.Metadata.Index {
			// Crashed between recording a snapshot from the leader and swapping its database in.
			if _, err := os.Stat(s.snapDBPath(sn.Metadata.Index)); err == nil {
				if err := s.be.ReplaceWith(s.snapDBPath(sn.Metadata.Index)); err != nil {
					return err
				}
				if err := s.les.Reload(); err != nil {
					return err
				}
				if err := s.kv.Reload(); err != nil {
					return err
				}
				if s.alarms, err = loadAlarms(s.be); err != nil {
					return err
				}
				if err := s.reloadAuth(); err != nil {
					return err
				}
				if s.mem, err = membership.Load(s.be, meta.ClusterID); err != nil {
					return err
				}
				s.initialPeers = s.mem.List()
				cindex, _ = s.consistentIndex()
				s.log.Info("finished installing the snapshot received before the last stop", "index", sn.Metadata.Index)
			}
		}
		if cindex < sn.Metadata.Index {
			return fmt.Errorf("database file (index %d) does not match the latest snapshot (index %d): the database was replaced or rolled back; %s",
				cindex, sn.Metadata.Index, repairHint(s.id))
		}
		if err := s.storage.ApplySnapshot(sn); err != nil {
			return fmt.Errorf("apply snapshot: %w", err)
		}
		s.snapIndex = sn.Metadata.Index
		s.memSnapIndex, s.memSnapBytes = sn.Metadata.Index, 0
		s.savedSnapIndex = sn.Metadata.Index
		s.confState = sn.Metadata.ConfState
	}
	if err := checkLogCoversDB(s.id, cfg.walDir(), st, ents, s.consistentIndex); err != nil {
		return err
	}
	if cfg.ForceNewCluster {
		if st, ents, err = s.forceNewCluster(sn, st, ents, cindex); err != nil {
			return err
		}
	}
	if err := s.storage.SetHardState(st); err != nil {
		return fmt.Errorf("set hard state: %w", err)
	}
	if err := s.storage.Append(ents); err != nil {
		return fmt.Errorf("append WAL entries: %w", err)
	}
	s.replayedTo = cindex
	_, s.appliedTerm = s.consistentIndex()
	s.appliedIndex.Store(sn.Metadata.Index)
	s.applyW.advance(sn.Metadata.Index)
	rcfg.ID = s.id
	rcfg.Applied = sn.Metadata.Index
	s.node = raft.RestartNode(rcfg)
	s.log.Info("restarted member", "member-id", fmt.Sprintf("%x", s.id), "cluster-id", fmt.Sprintf("%x", meta.ClusterID),
		"commit-index", st.Commit, "snapshot-index", sn.Metadata.Index, "consistent-index", cindex, "wal-entries", len(ents))
	return nil
}

// maybeDefragAtStart defragments the backend before anything is served when at least
// --bootstrap-defrag-threshold-megabytes of it is free pages, as upstream does.
func (s *Server) maybeDefragAtStart() error {
	threshold := int64(s.cfg.BootstrapDefragThresholdMegabytes) * 1024 * 1024
	if threshold == 0 {
		return nil
	}
	size, inUse := s.be.Size(), s.be.SizeInUse()
	if size-inUse < threshold {
		s.log.Info("Skipping defragmentation", "current-db-size-bytes", size, "current-db-size-in-use-bytes", inUse,
			"experimental-bootstrap-defrag-threshold-bytes", threshold)
		return nil
	}
	s.log.Info("defragmenting", "path", s.cfg.BackendPath(), "current-db-size-bytes", size, "current-db-size-in-use-bytes", inUse)
	if err := s.be.Defrag(); err != nil {
		return fmt.Errorf("defragment at start: %w", err)
	}
	s.log.Info("finished defragmenting directory", "path", s.cfg.BackendPath(), "current-db-size-bytes-diff", s.be.Size()-size,
		"current-db-size-bytes", s.be.Size())
	return nil
}

// consistentIndex is the last applied index and term the backend has committed.
func (s *Server) consistentIndex() (index, term uint64) {
	_ = s.be.View(func(tx *bolt.Tx) error {
		index, term = schema.ReadConsistentIndex(tx)
		return nil
	})
	return index, term
}

// Start runs the member's loops.
func (s *Server) Start() {
	s.wg.Add(5)
	go s.versionLoop()
	go s.raftLoop()
	go s.applyLoop()
	go s.readLoop()
	go s.leaseLoop()
	go s.publish()
	s.wg.Add(5)
	go func() { defer s.wg.Done(); s.snapshotSaver() }()
	go func() { defer s.wg.Done(); s.watchBackend() }()
	go func() { defer s.wg.Done(); s.adjustTicks() }()
	go func() { defer s.wg.Done(); s.monitorCorruption() }()
	go func() { defer s.wg.Done(); s.monitorCompactHash() }()
	if s.cfg.AutoCompactionMode != "" {
		s.wg.Add(1)
		go s.autoCompact()
	}
}

// ID is this member's ID.
func (s *Server) ID() uint64 { return s.id }

// ClusterID is the cluster's ID.
func (s *Server) ClusterID() uint64 { return s.mem.ClusterID() }

// Leader is the current leader's ID (0: none known).
func (s *Server) Leader() uint64 { return s.lead.Load() }

// Term is the current raft term.
func (s *Server) Term() uint64 { return s.term.Load() }

// KV is the member's MVCC store (reads go straight to it).
func (s *Server) KV() *mvcc.Store { return s.kv }

// Backend is the member's bbolt file.
func (s *Server) Backend() *backend.Backend { return s.be }

// Lessor is the member's lease table.
func (s *Server) Lessor() *lease.Lessor { return s.les }

// Config returns the configuration the member runs with.
func (s *Server) Config() Config { return s.cfg }

// Stopping is closed when the member begins to stop.
func (s *Server) Stopping() <-chan struct{} { return s.stopping }

func (s *Server) raftLoop() {
	defer s.wg.Done()
	ticker := time.NewTicker(s.cfg.heartbeat())
	defer ticker.Stop()
	st := readyState{}
	st.persisted, _ = s.storage.LastIndex()
	st.saved, _, _ = s.storage.InitialState()
	for {
		select {
		case <-ticker.C:
			s.node.Tick()
		case rd := <-s.node.Ready():
			if !s.handleReady(rd, &st) {
				return
			}
			s.node.Advance()
		case <-s.stopping:
			return
		}
	}
}

// readyState is what the raft loop carries from one Ready to the next.
type readyState struct {
	leader bool
	// persisted is the last log index in the WAL (and raft's storage).
	persisted uint64
	// saved is the hard state last written to the WAL.
	saved raftpb.HardState
}

// handleReady persists, sends and hands to the applier what one Ready holds; false when the
// member is stopping or must stop.
//
// Two things overlap with the WAL's fsync, as in upstream: a leader's messages go out before its
// own write (raft counts the leader's own copy only after Advance, so nothing commits on an
// unwritten leader entry), and committed entries that are already in the WAL are applied while
// the new ones are written. Committed entries not yet in the WAL (a follower learns of a commit
// with the entries) are applied only after the write, so the database never gets ahead of the
// WAL (the start-up check refuses such a data dir).
func (s *Server) handleReady(rd raft.Ready, st *readyState) bool {
	if rd.SoftState != nil {
		s.onSoftState(rd.SoftState)
		s.heartbeats.reset()
		st.leader = rd.SoftState.RaftState == raft.StateLeader
	}
	for _, rs := range rd.ReadStates {
		select {
		case s.readc <- rs:
		default:
			s.log.Warn("dropped a read state: read loop is behind")
		}
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		s.term.Store(rd.HardState.Term)
		s.committedIndex.Store(rd.HardState.Commit)
		s.m.proposalsCommitted.Set(float64(rd.HardState.Commit))
	}
	hasSnap := !raft.IsEmptySnap(rd.Snapshot)
	// A new term or vote must be durable before any message carries it.
	sendEarly := st.leader && (raft.IsEmptyHardState(rd.HardState) ||
		rd.HardState.Term == st.saved.Term && rd.HardState.Vote == st.saved.Vote)
	var msgs []raftpb.Message
	if len(rd.Messages) > 0 {
		msgs = s.divertSnapshots(rd.Messages)
		s.heartbeats.observe(msgs, s)
	}
	if sendEarly {
		s.tr.Send(msgs)
	}
	stable, rest := splitCommitted(rd.CommittedEntries, st.persisted, hasSnap)
	var early *applyBatch
	if len(stable) > 0 {
		early = &applyBatch{ents: stable, applied: make(chan struct{})}
		if !s.queueApply(*early) {
			return false
		}
	}
	if hasSnap {
		if err := s.saveReceivedSnapshot(rd.Snapshot); err != nil {
			s.fatal("failed to save Raft snapshot", err)
			return false
		}
	}
	if err := s.wal.Save(rd.HardState, rd.Entries); err != nil {
		s.fatal("failed to save Raft hard state and entries", err)
		return false
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		st.saved = rd.HardState
	}
	if hasSnap {
		if err := s.storage.ApplySnapshot(rd.Snapshot); err != nil {
			s.fatal("failed to apply the incoming snapshot to raft storage", err)
			return false
		}
		st.persisted = rd.Snapshot.Metadata.Index
	}
	if err := s.storage.Append(rd.Entries); err != nil {
		s.fatal("failed to append entries to raft storage", err)
		return false
	}
	if len(rd.Entries) > 0 {
		st.persisted = rd.Entries[len(rd.Entries)-1].Index
	}
	// Followers must persist before answering.
	if !sendEarly {
		s.tr.Send(msgs)
	}
	var late *applyBatch
	if len(rest) > 0 || hasSnap {
		late = &applyBatch{ents: rest, snap: rd.Snapshot, applied: make(chan struct{})}
		if !s.queueApply(*late) {
			return false
		}
	}
	// Raft must see a new configuration before the next Ready.
	for _, b := range []*applyBatch{early, late} {
		if b != nil && hasConfChange(b.ents) {
			select {
			case <-b.applied:
			case <-s.stopping:
				return false
			}
		}
	}
	return true
}

// splitCommitted divides committed entries into those already in the WAL (up to persisted),
// which may be applied while this Ready is written, and the rest, applied after. With a snapshot
// in the Ready everything waits: the snapshot goes first.
func splitCommitted(ents []raftpb.Entry, persisted uint64, hasSnap bool) (stable, rest []raftpb.Entry) {
	if hasSnap {
		return nil, ents
	}
	for i, e := range ents {
		if e.Index > persisted {
			return ents[:i], ents[i:]
		}
	}
	return ents, nil
}

// queueApply hands a batch to the apply loop; false when the member is stopping.
func (s *Server) queueApply(b applyBatch) bool {
	select {
	case s.applyc <- b:
		return true
	case <-s.stopping:
		return false
	}
}

func hasConfChange(ents []raftpb.Entry) bool {
	for _, e := range ents {
		if e.Type == raftpb.EntryConfChange || e.Type == raftpb.EntryConfChangeV2 {
			return true
		}
	}
	return false
}

func (s *Server) onSoftState(ss *raft.SoftState) {
	old := s.lead.Swap(ss.Lead)
	if ss.Lead != raft.None {
		s.m.hasLeader.Set(1)
	} else {
		s.m.hasLeader.Set(0)
	}
	if ss.RaftState == raft.StateLeader {
		s.m.isLeader.Set(1)
	} else {
		s.m.isLeader.Set(0)
	}
	if old != ss.Lead {
		s.leaders.notify()
		if ss.Lead != raft.None {
			s.m.leaderChanges.Inc()
		}
		s.log.Info("leader changed", "member-id", fmt.Sprintf("%x", s.id), "leader", fmt.Sprintf("%x", ss.Lead), "state", ss.RaftState.String())
		if ss.Lead == s.id {
			s.les.Promote(s.cfg.electionTimeout())
		} else {
			s.les.Demote()
		}
	}
}

// fatal stops the member after an unrecoverable local error (a full or failing disk): going on
// could acknowledge writes that are not durable. msg is upstream's fatal message where it has
// one; the first call wins, so the log holds one fatal line naming the cause.
func (s *Server) fatal(msg string, err error) {
	s.fatalOnce.Do(func() {
		s.log.Log(context.Background(), logutil.LevelFatal, msg, "error", err.Error())
		go s.Stop()
	})
}

// watchBackend stops the member when the database stops taking writes (a failed commit, such as
// on a full disk). The WAL still holds every entry the failed batch had, so a restart after the
// cause is fixed replays them.
func (s *Server) watchBackend() {
	select {
	case <-s.be.Failed():
		s.fatal("failed to commit tx", s.be.Err())
	case <-s.stopping:
	}
}

func (s *Server) applyLoop() {
	defer s.wg.Done()
	for {
		select {
		case b := <-s.applyc:
			s.applyBatch(b)
			close(b.applied)
		case m := <-s.msgSnapC:
			s.sendSnapshot(m)
		case <-s.stopping:
			return
		}
	}
}

// divertSnapshots hands snapshot messages to the apply goroutine, which attaches the database,
// and returns the rest for the transport.
func (s *Server) divertSnapshots(msgs []raftpb.Message) []raftpb.Message {
	out := msgs[:0]
	for _, m := range msgs {
		if m.Type != raftpb.MsgSnap {
			out = append(out, m)
			continue
		}
		select {
		case s.msgSnapC <- m:
		default:
			s.node.ReportSnapshot(m.To, raft.SnapshotFailure)
		}
	}
	return out
}

func (s *Server) applyBatch(b applyBatch) {
	if !raft.IsEmptySnap(b.snap) && b.snap.Metadata.Index > s.appliedIndex.Load() {
		if err := s.installSnapshot(b.snap); err != nil {
			s.fatal("failed to install the snapshot from the leader", err)
			return
		}
		s.applyW.advance(s.appliedIndex.Load())
	}
	for _, e := range b.ents {
		if e.Index <= s.appliedIndex.Load() {
			continue
		}
		s.applyEntry(e)
		s.memSnapBytes += uint64(len(e.Data))
		s.appliedIndex.Store(e.Index)
		s.appliedTerm = e.Term
	}
	applied := s.appliedIndex.Load()
	s.m.proposalsApplied.Set(float64(applied))
	s.applyW.advance(applied)
	if toDisk, due := snapshotDue(applied, s.snapIndex, s.memSnapIndex, s.memSnapBytes, s.cfg.SnapshotCount, s.forceSnapshot); due {
		if err := s.snapshot(applied, toDisk); err != nil {
			s.log.Error("failed to take raft snapshot", "index", applied, "to-disk", toDisk, "error", err)
		}
	}
}

// v2StoreDoc is the data of a raft snapshot taken now: the membership and cluster version as
// upstream's v2-store document.
func (s *Server) v2StoreDoc() ([]byte, error) {
	var cv string
	if c := s.ClusterVersion(); !c.IsZero() {
		cv = c.Full()
	}
	data, err := membership.EncodeV2Store(s.mem.State(), cv)
	if err != nil {
		return nil, fmt.Errorf("encode the v2 store for a snapshot: %w", err)
	}
	return data, nil
}

// tracerName names this package's spans (under the gRPC server span of the request).
const tracerName = "etcdx/server/etcdserver"

// propose sends r through raft and waits for the applier's result.
func (s *Server) propose(ctx context.Context, r *pb.InternalRaftRequest) (_ *applyResult, err error) {
	if exceedsRequestLimit(s.appliedIndex.Load(), s.committedIndex.Load(), r, s.cfg.Features.Enabled(features.PriorityRequest)) {
		return nil, ErrTooManyRequests
	}
	id := s.reqIDs.next()
	r.Header = &pb.RequestHeader{ID: id}
	// Every member checks the caller's permissions again when it applies the entry; Authenticate
	// names its user in the request itself.
	if r.Authenticate == nil {
		in, err := s.Caller(ctx)
		if err != nil {
			return nil, err
		}
		if in != nil {
			r.Header.Username, r.Header.AuthRevision = in.Username, in.Revision
		}
	}
	defer func(start time.Time) { s.m.observeRequest(requestType(r), start, err) }(time.Now())
	data, err := r.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if len(data) > int(s.cfg.MaxRequestBytes) {
		return nil, ErrRequestTooLarge
	}
	if err := s.waitLeader(ctx); err != nil {
		return nil, err
	}
	ch := s.waits.register(id)
	cctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout())
	defer cancel()
	s.m.proposalsPending.Inc()
	defer s.m.proposalsPending.Dec()
	// Spans only when the request is traced (tracing on and sampled): building them costs a few
	// allocations per write otherwise.
	span := trace.SpanFromContext(ctx)
	traced := span.IsRecording()
	var tracer trace.Tracer
	pctx := ctx
	if traced {
		tracer = span.TracerProvider().Tracer(tracerName)
		pctx, span = tracer.Start(ctx, "raft proposal")
		defer span.End()
	}
	if err := s.proposeRetrying(cctx, data); err != nil {
		s.waits.trigger(id, nil)
		s.m.proposalsFailed.Inc()
		span.RecordError(err)
		return nil, s.proposeErr(ctx, err)
	}
	proposed := time.Now()
	select {
	case x := <-ch:
		if x == nil {
			return nil, ErrStopped
		}
		res := x.(*applyResult)
		if traced {
			// The commit and apply happened elsewhere; their spans take the times recorded there.
			_, commit := tracer.Start(pctx, "raft commit", trace.WithTimestamp(proposed))
			commit.End(trace.WithTimestamp(res.applied))
			_, apply := tracer.Start(pctx, "apply", trace.WithTimestamp(res.applied))
			apply.End(trace.WithTimestamp(res.appliedAt))
		}
		return res, nil
	case <-cctx.Done():
		s.waits.trigger(id, nil)
		s.m.proposalsFailed.Inc()
		return nil, s.proposeErr(ctx, cctx.Err())
	case <-s.stopping:
		return nil, ErrStopped
	}
}

func (s *Server) proposeErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	select {
	case <-s.stopping:
		return ErrStopped
	default:
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTimeout
	}
	return err
}

// notifier is shared by every read waiting for the same ReadIndex round.
type notifier struct {
	c   chan struct{}
	err error
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

func (s *Server) readLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.readWake:
		case <-s.stopping:
			return
		}
		s.readMu.Lock()
		nr := s.readNotifier
		s.readNotifier = newNotifier()
		s.readMu.Unlock()
		nr.notify(s.readIndexRound())
	}
}

// readIndexRetry is how long a ReadIndex round waits for an answer before asking again, as
// upstream's (its slow-read-index counter counts each such retry).
const readIndexRetry = 500 * time.Millisecond

func (s *Server) readIndexRound() error {
	id := s.reqIDs.next()
	rctx := make([]byte, 8)
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
	leaderChanged := s.leaders.changed()
	if err := send(); err != nil {
		s.m.readIndexFailed.Inc()
		return ErrTimeout
	}
	for {
		select {
		case <-leaderChanged:
			leaderChanged = s.leaders.changed()
			if s.lead.Load() == raft.None {
				continue
			}
			if err := send(); err != nil {
				s.m.readIndexFailed.Inc()
				return ErrTimeout
			}
			retry.Reset(readIndexRetry)
		case rs := <-s.readc:
			if binary.BigEndian.Uint64(rs.RequestCtx) != id {
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

// checkpointLeases records remaining TTLs through raft (0 clears a lease's checkpoint).
func (s *Server) checkpointLeases(rem map[int64]int64) {
	req := &pb.LeaseCheckpointRequest{}
	for id, ttl := range rem {
		req.Checkpoints = append(req.Checkpoints, &pb.LeaseCheckpoint{ID: id, Remaining_TTL: ttl})
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
	defer cancel()
	if res, err := s.propose(ctx, &pb.InternalRaftRequest{LeaseCheckpoint: req}); err != nil || res.err != nil {
		s.log.Warn("failed to checkpoint lease TTLs", "leases", len(rem), "error", errors.Join(err, resErr(res)))
	}
}

func resErr(r *applyResult) error {
	if r == nil {
		return nil
	}
	return r.err
}

// leaseLoop has the leader revoke expired leases and checkpoint remaining TTLs through raft.
func (s *Server) leaseLoop() {
	defer s.wg.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	cp := time.NewTicker(s.cfg.LeaseCheckpointInterval)
	defer cp.Stop()
	for {
		select {
		case <-t.C:
		case <-cp.C:
			if rem := s.les.Remaining(); len(rem) > 0 {
				go s.checkpointLeases(rem)
			}
			continue
		case <-s.stopping:
			return
		}
		for _, id := range s.les.Expired(1000) {
			go func(id int64) {
				ctx, cancel := context.WithTimeout(s.AsRoot(context.Background()), s.cfg.requestTimeout())
				defer cancel()
				if _, err := s.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: id}); err != nil && !errors.Is(err, lease.ErrNotFound) {
					s.log.Warn("failed to revoke expired lease", "lease-id", fmt.Sprintf("%016x", id), "error", err)
				} else if err == nil {
					s.m.leaseExpired.Inc()
				}
			}(id)
		}
	}
}

// publish records this member's name and client URLs in the replicated membership.
func (s *Server) publish() {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
		err := s.proposeApplied(ctx, &pb.InternalRaftRequest{ClusterMemberAttrSet: membership.Publish(s.id, s.cfg.Name, s.cfg.ClientURLs, buildinfo.Version)})
		cancel()
		if err == nil {
			s.log.Info("published local member to cluster through raft", "local-member-id", fmt.Sprintf("%x", s.id),
				"name", s.cfg.Name, "client-urls", s.cfg.ClientURLs, "cluster-id", fmt.Sprintf("%x", s.ClusterID()))
			close(s.ready)
			return
		}
		select {
		case <-s.stopping:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// BeginDrain tells long-lived client streams (watch, lease keep-alive) to end with a retriable
// error, so a graceful gRPC stop only waits for short requests and clients move to other members.
func (s *Server) BeginDrain() { s.drainOnce.Do(func() { close(s.draining) }) }

// Draining is closed once BeginDrain was called.
func (s *Server) Draining() <-chan struct{} { return s.draining }

// Stop stops the member: no new requests, loops end, files are closed.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.waitRemoteProposals(s.cfg.electionTimeout())
		close(s.stopping)
		s.node.Stop()
		s.wg.Wait()
		s.tr.Stop()
		s.auth.Close()
		s.kv.Close()
		if err := s.be.Close(); err != nil {
			s.log.Error("closing backend", "error", err)
		}
		if err := s.wal.Close(); err != nil {
			s.log.Error("closing WAL", "error", err)
		}
		close(s.done)
	})
	<-s.done
}

// removedByPeer stops the member when a peer says it was removed from the cluster (it was down
// when its removal was applied, or it is being refused by every member).
func (s *Server) removedByPeer() {
	s.removedSelf.Store(true)
	s.Stop()
}

// RemovedFromCluster reports whether the member stopped because it was removed.
func (s *Server) RemovedFromCluster() bool { return s.removedSelf.Load() }

// ReadyNotify is closed once the member has joined the cluster and can serve clients.
func (s *Server) ReadyNotify() <-chan struct{} { return s.ready }

// Done is closed once the member has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Version is the server version this member runs.
func (s *Server) Version() string { return buildinfo.Version }

// AppliedIndex is the last applied raft index.
func (s *Server) AppliedIndex() uint64 { return s.appliedIndex.Load() }

// CommittedIndex is the last known committed raft index.
func (s *Server) CommittedIndex() uint64 { return s.committedIndex.Load() }

// Members lists the cluster's members.
func (s *Server) Members() []membership.Member { return s.mem.List() }

// raftLogger adapts slog to raft's logger interface.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)              { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(f string, v ...any)   { r.l.Debug(fmt.Sprintf(f, v...)) }
func (r raftLogger) Error(v ...any)              { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(f string, v ...any)   { r.l.Error(fmt.Sprintf(f, v...)) }
func (r raftLogger) Info(v ...any)               { r.l.Info(fmt.Sprint(v...)) }
func (r raftLogger) Infof(f string, v ...any)    { r.l.Info(fmt.Sprintf(f, v...)) }
func (r raftLogger) Warning(v ...any)            { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(f string, v ...any) { r.l.Warn(fmt.Sprintf(f, v...)) }
func (r raftLogger) Fatal(v ...any)              { r.l.Error(fmt.Sprint(v...)); os.Exit(1) }
func (r raftLogger) Fatalf(f string, v ...any)   { r.l.Error(fmt.Sprintf(f, v...)); os.Exit(1) }
func (r raftLogger) Panic(v ...any)              { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }

// saveSnap writes a raft snapshot file, with its metrics.
func (s *Server) saveSnap(sn raftpb.Snapshot) error {
	tm, err := snap.SaveTimed(s.cfg.snapDir(), sn)
	if err == nil {
		s.m.snapMarshal.Observe(tm.Marshal.Seconds())
		s.m.snapFsync.Observe(tm.Fsync.Seconds())
	}
	return err
}
