package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/backend"
	"etcdx/server/features"
	"etcdx/server/lease"
	"etcdx/server/membership"
	"etcdx/server/mvcc"
	"etcdx/server/rangewire"
	"etcdx/server/schema"
	"etcdx/server/snap"
	"etcdx/server/transport"
	"etcdx/server/v2store"
	"etcdx/server/version"
	"etcdx/server/wal"
)

// New opens or bootstraps the member in cfg.DataDir. Call Start to run it.
// dbLockWait is how long a starting member waits for another process to let go of its database
// file (after the first second) before it gives up.
const dbLockWait = 15 * time.Second

func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	lg := cfg.Logger
	if err := os.MkdirAll(cfg.snapDir(), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	s := &Server{cfg: cfg, log: lg, waits: newWaitRegistry(), applyc: make(chan applyBatch, 128),
		readc: make(chan raft.ReadState, 16), msgSnapC: make(chan raftpb.Message, 16), snapJobs: make(chan snapJob, 1), readWake: make(chan struct{}, 1), readNotifier: newNotifier(), versionWake: make(chan struct{}, 1),
		rangeBufs: rangewire.NewPool(rangeBufsKept),
		draining:  make(chan struct{}), stopping: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{})}
	s.batcher = newProposalBatcher(&s.committedIndex, cfg.heartbeat(), roundPace, maxRoundPace)
	if !version.NoV2API.Built(cfg.Level) {
		s.v2 = v2store.New(time.Now, v2store.ClusterPrefix, v2store.KeysPrefix)
		s.peerStats = newPeerStats(time.Now())
	}
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
	bcfg := backend.Config{Path: cfg.BackendPath(), Buckets: schema.Buckets, Logger: lg,
		BatchInterval: cfg.BackendBatchInterval, BatchLimit: cfg.BackendBatchLimit,
		FreelistType: cfg.BackendFreelistType, UnsafeNoSync: cfg.UnsafeNoFsync}
	s.be, err = backend.Open(bcfg)
	if errors.Is(err, backend.ErrLocked) {
		// Upstream waits for the lock without a word (a restart that overlaps the old
		// process's exit gets through); ours waits a bounded time and says why.
		lg.Warn("the database file is locked by another process; waiting for it", "path", bcfg.Path, "wait", dbLockWait.String())
		bcfg.OpenTimeout = dbLockWait
		s.be, err = backend.Open(bcfg)
	}
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
		if err := version.CheckStart(cfg.release(), storage, cluster, dg, cfg.DataDir); err != nil {
			return fail(err)
		}
	}
	minTTL := int64((3*cfg.ElectionTicks)/2) * int64(cfg.TickMs) / 1000
	if rem := (int64((3*cfg.ElectionTicks)/2) * int64(cfg.TickMs)) % 1000; rem != 0 {
		minTTL++
	}
	if s.les, err = lease.New(s.be, minTTL, cfg.LeaseClock); err != nil {
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
	if cfg.WALDisk != nil {
		s.wal.SetDisk(cfg.WALDisk)
	}
	if cfg.UnsafeNoFsync {
		s.wal.SetUnsafeNoSync()
	}
	s.tr = cfg.peers().Transport(transport.Config{ID: s.id, ClusterID: s.mem.ClusterID(), ServerVersion: cfg.release(),
		MinClusterVersion: version.WireMinClusterVersion, Raft: s, Logger: lg.With("component", "transport"), TLS: cfg.PeerTLS, LocalAddr: cfg.PeerLocalAddr,
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
	s.log.Info("starting etcd server", "local-member-id", fmt.Sprintf("%x", s.id), "local-server-version", cfg.release(),
		"cluster-id", fmt.Sprintf("%x", s.ClusterID()), "cluster-version", s.ClusterVersion().String())
	return s, nil
}

func (s *Server) bootstrap(rcfg *raft.Config) error {
	if s.cfg.NewCluster && s.cfg.Discover != nil {
		s.log.Info("bootstrapping cluster using " + s.cfg.DiscoveryProtocol + " discovery")
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
	if s.cfg.Discover == nil && s.alreadyBootstrapped(in.SelfID) {
		return fmt.Errorf("member %x has already been bootstrapped", in.SelfID)
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
		if s.v2 != nil {
			if err := s.v2.Recover(sn.Data); err != nil {
				return fmt.Errorf("v2 store in snapshot %d: %w", sn.Metadata.Index, err)
			}
		}
		// upstream's events, which its tests and operators' scripts wait for
		if cindex >= sn.Metadata.Index {
			s.log.Info("Skipping snapshot backend", "consistent-index", cindex, "snapshot-index", sn.Metadata.Index)
		} else {
			s.log.Info("Recovering from snapshot backend", "consistent-index", cindex, "snapshot-index", sn.Metadata.Index)
		}
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
			// upstream's words first (it looks for the leader's database file and finds none)
			return fmt.Errorf("failed to find database snapshot file (snap: snapshot file doesn't exist): database file (index %d) does not match the latest snapshot (index %d): the database was replaced or rolled back; %s",
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
	if err := s.checkV2Content(sn, ents); err != nil {
		return err
	}
	if err := checkLogCoversDB(s.id, cfg.walDir(), st, sn.Metadata.Index, ents, s.consistentIndex); err != nil {
		return err
	}
	v2, err := membership.ReplayV2(s.replayMem.State(), ents, sn.Metadata.Index, cindex)
	if err != nil {
		return err
	}
	if err := s.reconcileMembership(v2, membership.PromotedIn(ents, sn.Metadata.Index, cindex)); err != nil {
		return err
	}
	s.initialPeers = s.mem.List()
	// A power cut can leave the WAL's synced commit index behind what the database applied
	// (raft does not sync a hard state whose only change is the commit): every applied entry was
	// committed, and the WAL holds it (checked above), so raft starts from that commit. Left
	// behind, raft would take a leader's snapshot older than the database for news, and the
	// database would go back while the entries after it count as already applied.
	if cindex > st.Commit {
		s.log.Info("raising the commit index to what the database applied", "wal-commit-index", st.Commit, "consistent-index", cindex)
		st.Commit = cindex
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
	if err := s.be.Defrag(); err != nil { // logs upstream's "defragmenting" and "finished defragmenting directory"
		return fmt.Errorf("defragment at start: %w", err)
	}
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

// alreadyBootstrapped asks the other members of --initial-cluster, as upstream does before it
// bootstraps a new cluster, whether they run a cluster in which this member has already served
// (it is listed with client URLs): its data dir was then lost, and bootstrapping again would
// start it as a new member of a cluster that has moved on. The first peer that answers decides;
// each gets bootstrapCheckTimeout (upstream's default), so a start whose peers are not up yet
// waits for that long per peer URL that neither answers nor refuses the connection.
func (s *Server) alreadyBootstrapped(self uint64) bool {
	others := s.cfg.otherPeerURLs()
	if len(others) == 0 {
		return false
	}
	rc, err := fetchCluster(s.cfg.peerHTTPClient(bootstrapCheckTimeout), others)
	if err != nil {
		return false
	}
	for _, m := range rc.members {
		if m.ID == self {
			return len(m.ClientURLs) > 0
		}
	}
	return false
}

// otherPeerURLs are the peer URLs of --initial-cluster's other members, in order (the order
// upstream asks them in).
func (c *Config) otherPeerURLs() []string {
	var others []string
	for name, urls := range c.InitialCluster {
		if name != c.Name {
			others = append(others, urls...)
		}
	}
	sort.Strings(others)
	return others
}

// bootstrapCheckTimeout bounds each peer's answer to alreadyBootstrapped.
const bootstrapCheckTimeout = time.Second

// remoteCluster is what a peer says about the cluster a member is about to join.
type remoteCluster struct {
	members   []membership.Member
	id        uint64
	version   version.Level
	downgrade version.DowngradeInfo
}

func fetchCluster(client *http.Client, urls []string) (*remoteCluster, error) {
	var lastErr error
	for _, u := range urls {
		resp, err := client.Get(strings.TrimRight(u, "/") + membersPath)
		if err != nil {
			lastErr = err
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			lastErr = fmt.Errorf("%s answered %s", u, resp.Status)
			continue
		}
		cid, err := strconv.ParseUint(resp.Header.Get("X-Etcd-Cluster-ID"), 16, 64)
		if err != nil {
			lastErr = fmt.Errorf("%s sent no cluster ID", u)
			continue
		}
		rc := &remoteCluster{id: cid}
		if err := json.Unmarshal(body, &rc.members); err != nil {
			lastErr = fmt.Errorf("%s: %w", u, err)
			continue
		}
		if v := resp.Header.Get(headerClusterVersion); v != "" {
			if rc.version, err = version.ParseLevel(v); err != nil {
				lastErr = fmt.Errorf("%s sent an unreadable cluster version: %w", u, err)
				continue
			}
		}
		if t := resp.Header.Get(headerDowngradeTarget); t != "" {
			rc.downgrade = version.DowngradeInfo{TargetVersion: t, Enabled: true}
		}
		return rc, nil
	}
	return nil, fmt.Errorf("could not retrieve the cluster's members from any peer in --initial-cluster: %v", lastErr)
}

// ErrNotAdded is what a joining member's start fails with when the peer it asked lists no member
// with its peer URLs: not added yet, or a peer that has not applied the addition yet.
var ErrNotAdded = errors.New("etcdserver: this member is not in the cluster")

// notAddedError says which member and how to add it, and is ErrNotAdded.
type notAddedError struct{ msg string }

func (e notAddedError) Error() string { return e.msg }
func (e notAddedError) Unwrap() error { return ErrNotAdded }

// joinExisting prepares a member that was added with `member add` to catch up from the leader.
func (s *Server) joinExisting(rcfg *raft.Config) error {
	cfg := s.cfg
	rc, err := fetchCluster(cfg.peerHTTPClient(5*time.Second), cfg.otherPeerURLs())
	if err != nil {
		return err
	}
	members, cid := rc.members, rc.id
	if err := version.CheckJoin(s.cfg.Level, rc.version, rc.downgrade); err != nil {
		return err
	}
	var self *membership.Member
	for i := range members {
		if membership.SameURLs(members[i].PeerURLs, cfg.PeerURLs) {
			self = &members[i]
		}
	}
	if self == nil {
		return notAddedError{fmt.Sprintf("this member (peer URLs %v) is not in the cluster; add it first with 'etcdctl member add %s --peer-urls=%s'",
			cfg.PeerURLs, cfg.Name, strings.Join(cfg.PeerURLs, ","))}
	}
	s.id = self.ID
	w, err := wal.Create(cfg.walDir(), schema.WALMetadata{NodeID: s.id, ClusterID: cid}.Encode())
	if err != nil {
		return err
	}
	s.wal = w
	if s.mem, err = membership.Load(s.be, cid); err != nil {
		return err
	}
	s.initialPeers = members
	rcfg.ID = s.id
	// The configuration arrives with the leader's log, from the first entry.
	s.node = raft.RestartNode(rcfg)
	s.log.Info("joining existing cluster", "member-id", fmt.Sprintf("%x", s.id), "cluster-id", fmt.Sprintf("%x", cid), "members", len(members))
	return nil
}
