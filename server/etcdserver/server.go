package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/apply"
	"etcdx/server/auth"
	"etcdx/server/backend"
	"etcdx/server/broadcast"
	"etcdx/server/lease"
	"etcdx/server/logutil"
	"etcdx/server/membership"
	"etcdx/server/mvcc"
	"etcdx/server/rangewire"
	"etcdx/server/v2store"
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
	ErrKeyNotFound     = apply.ErrKeyNotFound
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
	// rangeBufs keeps the buffers of sent range answers for the next ones.
	rangeBufs *rangewire.Pool

	node    raft.Node
	storage *raft.MemoryStorage
	wal     *wal.WAL
	m       *metrics
	// tr carries raft messages to peers; peerClient forwards lease calls to the leader.
	tr         PeerTransport
	peerClient *http.Client
	// heartbeats notices a leader that sends heartbeats late (raft loop only).
	heartbeats heartbeatDetector
	// peerStats counts raft traffic for upstream's /v2/stats/self and /v2/stats/leader.
	peerStats *peerStats
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
	// v2 is the v2 store a 3.5 member keeps (nil from 3.6 on): see v2store.go.
	v2 *v2store.Store
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
	leaders broadcast.Changes
	// remoteProposals counts proposals forwarded by peers that are still being handed to raft;
	// remoteClosed (under remoteMu) is set when the member stops taking them.
	remoteProposals sync.WaitGroup
	remoteMu        sync.Mutex
	remoteClosed    bool
	// handover says when proposals may be stepped into raft without waiting for its answer;
	// batcher gathers a leader's proposals into one step per Ready.
	handover handoverGate
	batcher  *proposalBatcher

	// draining closes when the member stops taking client work; long-lived streams end on it.
	draining  chan struct{}
	drainOnce sync.Once
	fatalOnce sync.Once
	stopping  chan struct{}
	done      chan struct{}
	// ready closes once this member has published itself through raft (upstream's ReadyNotify).
	ready       chan struct{}
	wg          sync.WaitGroup
	stopStarted atomic.Bool
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
	s.wg.Add(7)
	go func() { defer s.wg.Done(); s.batchProposals() }()
	go func() { defer s.wg.Done(); s.snapshotSaver() }()
	go func() { defer s.wg.Done(); s.monitorFDs() }()
	go func() { defer s.wg.Done(); s.watchBackend() }()
	go func() { defer s.wg.Done(); s.adjustTicks() }()
	go func() { defer s.wg.Done(); s.monitorCorruption() }()
	go func() { defer s.wg.Done(); s.monitorCompactHash() }()
	if s.v2 != nil {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.v2Expirer() }()
	}
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

// Logger is the member's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Stopping is closed when the member begins to stop.
func (s *Server) Stopping() <-chan struct{} { return s.stopping }

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

// BeginDrain tells long-lived client streams (watch, lease keep-alive) to end with a retriable
// error, so a graceful gRPC stop only waits for short requests and clients move to other members.
func (s *Server) BeginDrain() { s.drainOnce.Do(func() { close(s.draining) }) }

// Draining is closed once BeginDrain was called.
func (s *Server) Draining() <-chan struct{} { return s.draining }

// Stop stops the member: no new requests, loops end, files are closed.
func (s *Server) Stop() {
	// The first call stops; the others wait on done, a channel (not behind a sync.Once, whose
	// mutex a second caller would block on: a fatal error's stop beside the caller's own, and in
	// a synctest bubble a goroutine blocked on a mutex keeps the clock the first stop waits on
	// from moving).
	if s.stopStarted.CompareAndSwap(false, true) {
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
	}
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
func (s *Server) Version() string { return s.cfg.release() }

// Level is the etcd line this member runs as (Config.Level).
func (s *Server) Level() version.Level { return s.cfg.Level }

// AppliedIndex is the last applied raft index.
func (s *Server) AppliedIndex() uint64 { return s.appliedIndex.Load() }

// LeaderChanged is closed at the member's next leader change.
func (s *Server) LeaderChanged() <-chan struct{} { return s.leaders.Next() }

// AppliedNotify is closed once the member has applied raft index index.
func (s *Server) AppliedNotify(index uint64) <-chan struct{} { return s.applyW.wait(index) }

// CommittedIndex is the last known committed raft index.
func (s *Server) CommittedIndex() uint64 { return s.committedIndex.Load() }

// Members lists the cluster's members.
func (s *Server) Members() []membership.Member { return s.mem.List() }

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

// RaftStatus is raft's view of this member: term, commit, leader and, on the leader, each
// follower's progress (upstream's /debug/vars "raft.status").
func (s *Server) RaftStatus() raft.Status { return s.node.Status() }
