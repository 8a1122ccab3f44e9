package etcdserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"

	"etcdx/server/backend"
	"etcdx/server/schema"
	"etcdx/server/version"
)

// This file runs the version lifecycle; the rules themselves are in package version.

// versionState is the replicated cluster version and downgrade info, and this member's storage
// version. All three change only while applying raft entries (or loading a snapshot).
type versionState struct {
	mu        sync.RWMutex
	cluster   version.Level // zero until the leader first decides
	downgrade version.DowngradeInfo
	storage   version.Level
}

func loadVersionState(be *backend.Backend) (*versionState, error) {
	vs := &versionState{}
	err := be.View(func(tx *bolt.Tx) error {
		var err error
		if vs.storage, err = schema.Read(tx); err != nil {
			return err
		}
		if vs.cluster, err = schema.ReadClusterVersion(tx); err != nil {
			return err
		}
		vs.downgrade, err = schema.ReadDowngrade(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load versions: %w", err)
	}
	return vs, nil
}

func (v *versionState) get() (cluster version.Level, dg version.DowngradeInfo, storage version.Level) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.cluster, v.downgrade, v.storage
}

func (v *versionState) replace(o *versionState) {
	c, d, st := o.get()
	v.mu.Lock()
	v.cluster, v.downgrade, v.storage = c, d, st
	v.mu.Unlock()
}

// versionCluster is what the version rules need to know of the cluster right now.
func (s *Server) versionCluster() version.Cluster {
	cluster, dg, _ := s.vers.get()
	c := version.Cluster{Version: cluster, Downgrade: dg}
	for _, m := range s.mem.List() {
		c.Members = append(c.Members, version.Member{ID: m.ID, Version: s.memberVersion(m)})
	}
	return c
}

// ClusterVersion is the replicated cluster version (zero before the first decision).
func (s *Server) ClusterVersion() version.Level {
	c, _, _ := s.vers.get()
	return c
}

// Versions are the cluster version and the storage version (as StorageVersion) read together:
// a harness comparing the two needs one moment's pair (the storage version follows the cluster
// version in the apply that changed it).
func (s *Server) Versions() (cluster, storage version.Level) {
	c, _, st := s.vers.get()
	if !version.StorageVersion.Built(s.cfg.Level) {
		st = version.Level{}
	}
	return c, st
}

// StorageVersion is the schema level of this member's backend. A 3.5 binary has no notion of it
// and reports zero, as upstream 3.5 reports nothing.
func (s *Server) StorageVersion() version.Level {
	if !version.StorageVersion.Built(s.cfg.Level) {
		return version.Level{}
	}
	_, _, st := s.vers.get()
	return st
}

// DowngradeInfo is the replicated downgrade state.
func (s *Server) DowngradeInfo() version.DowngradeInfo {
	_, d, _ := s.vers.get()
	return d
}

// applyClusterVersion records a new cluster version (the entry at index) and moves this member's
// storage with it.
func (s *Server) applyClusterVersion(b *backend.BatchTx, ver string, index uint64) *applyResult {
	nv, err := version.ParseLevel(ver)
	if err != nil {
		return &applyResult{err: fmt.Errorf("cluster version %q: %w", ver, err)}
	}
	// A binary older than the cluster version runs only while a downgrade to exactly it is
	// enabled (upstream's rule); the leader is about to lower the version then.
	if _, dg, _ := s.vers.get(); version.TooOld(s.cfg.Level, nv, dg) {
		if index < s.committedIndex.Load() {
			// History: a member that joined during a downgrade replays the version the cluster
			// had before it; the later entries lower it again (versionLoop stops the member if
			// they do not).
			s.log.Info("replaying a cluster version newer than this binary from the log", "cluster-version", nv.String(), "local-version", s.cfg.release(), "index", index)
		} else {
			s.stopOlderBinary(nv)
			return &applyResult{err: fmt.Errorf("cluster version %s is newer than this binary %s", nv, s.cfg.release())}
		}
	}
	if err := schema.PutClusterVersion(b, nv); err != nil {
		return &applyResult{err: err}
	}
	s.vers.mu.Lock()
	old := s.vers.cluster
	s.vers.cluster = nv
	s.vers.mu.Unlock()
	if old != nv {
		// Upstream's messages and fields.
		cid, self := fmt.Sprintf("%x", s.ClusterID()), fmt.Sprintf("%x", s.id)
		if old.IsZero() {
			s.log.Info("set initial cluster version", "cluster-id", cid, "local-member-id", self, "cluster-version", nv.String())
		} else {
			s.log.Info("updated cluster version", "cluster-id", cid, "local-member-id", self, "from", old.String(), "to", nv.String())
		}
		s.m.setClusterVersion(nv)
		if !old.IsZero() && nv.Less(old) {
			// As upstream 3.6: a raft snapshot right after a downgrade of the cluster version, so
			// an older binary started on this data dir recovers from it instead of replaying
			// history it would refuse (the newer cluster version, a cancelled downgrade).
			s.log.Info("Cluster version downgrade detected, forcing snapshot", "prev-cluster-version", old.Full(), "new-cluster-version", nv.Full())
			s.forceSnapshot = true
		}
	}
	if err := s.followStorage(b); err != nil {
		return &applyResult{err: err}
	}
	return &applyResult{}
}

// stopOlderBinary stops a member whose binary is older than the cluster version: the leader raised
// it past this binary (it had not yet seen this member restart with an older one), and running on
// would mean running an unknown level.
func (s *Server) stopOlderBinary(cluster version.Level) {
	s.log.Error("the cluster version is newer than this binary; stopping", "cluster-version", cluster.String(), "local-version", s.cfg.release())
	go s.Stop()
}

// followStorage moves the storage version to where version.StorageTarget puts it, in the batch
// of the entry that changed the cluster version.
func (s *Server) followStorage(b *backend.BatchTx) error {
	cluster, dg, storage := s.vers.get()
	want, err := s.migrateStorage(b, cluster, storage)
	if err != nil || want.IsZero() {
		return err
	}
	if want != storage {
		s.vers.mu.Lock()
		s.vers.storage = want
		s.vers.mu.Unlock()
	}
	if version.ReadyToDowngrade(cluster, want, dg) {
		s.log.Info("the member is ready to be downgraded", "target-version", dg.Target().String(), "storage-version", want.String(), "server-version", s.cfg.release())
	}
	return nil
}

// migrateStorage migrates the backend's storage from storage to where version.StorageTarget
// puts it for cluster, in b, and returns it (zero where the storage stays as it is).
func (s *Server) migrateStorage(b *backend.BatchTx, cluster, storage version.Level) (version.Level, error) {
	want, ok := version.StorageTarget(s.cfg.Level, cluster)
	if !ok || want == storage {
		return want, nil
	}
	tx, err := b.WritableTx()
	if err != nil {
		return version.Level{}, err
	}
	from, done, err := schema.Migrate(tx, want)
	if err != nil {
		return version.Level{}, err
	}
	s.log.Info("migrated storage version", "from", from.String(), "to", want.String(), "actions", done)
	return want, nil
}

// alignReceivedStorage migrates a database just received with a snapshot, before anything reads
// its versions. It is the sender's, at the sender's storage version: a member that joins during
// a downgrade, before the leader lowered the cluster version, gets the newer schema, which its
// binary would refuse at its next start; it migrates now, as the apply lowering the cluster
// version would have made it do.
func (s *Server) alignReceivedStorage() error {
	vs, err := loadVersionState(s.be)
	if err != nil {
		return err
	}
	b := s.be.Batch()
	_, err = s.migrateStorage(b, vs.cluster, vs.storage)
	if uerr := b.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("align the received storage version: %w", err)
	}
	return s.be.Commit()
}

// alignStorage brings the storage version in line with the recorded cluster version at start
// (e.g. after an offline migration), before anything is served from it.
func (s *Server) alignStorage() error {
	b := s.be.Batch()
	err := s.followStorage(b)
	if uerr := b.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("align storage version: %w", err)
	}
	return s.be.Commit()
}

// applyDowngradeInfo records a downgrade being enabled or cancelled.
func (s *Server) applyDowngradeInfo(b *backend.BatchTx, r *membershippb.DowngradeInfoSetRequest) *applyResult {
	dg := version.DowngradeInfo{Enabled: r.Enabled}
	if r.Enabled {
		l, err := version.ParseLevel(r.Ver)
		if err != nil {
			return &applyResult{err: fmt.Errorf("downgrade target %q: %w", r.Ver, err)}
		}
		dg.TargetVersion = l.Full()
	}
	if err := schema.PutDowngrade(b, dg); err != nil {
		return &applyResult{err: err}
	}
	s.vers.mu.Lock()
	old := s.vers.downgrade
	s.vers.downgrade = dg
	s.vers.mu.Unlock()
	switch {
	case dg.Enabled:
		s.log.Info("downgrade enabled", "target-version", dg.Target().String(), "cluster-version", s.ClusterVersion().String())
	case old.Enabled:
		s.log.Info("downgrade info cleared", "previous-target-version", old.Target().String())
	}
	s.wakeVersions()
	return &applyResult{}
}

// wakeVersions asks the version loop to look again now rather than at its next tick.
func (s *Server) wakeVersions() {
	select {
	case s.versionWake <- struct{}{}:
	default:
	}
}

// versionLoop runs on every member: the leader decides the cluster version (and finishes
// downgrades); every member warns while its binary and the cluster version disagree.
func (s *Server) versionLoop() {
	defer s.wg.Done()
	select {
	case <-s.ready:
	case <-s.stopping:
		return
	}
	t := time.NewTicker(min(versionCheckInterval, s.cfg.DowngradeCheckTime))
	defer t.Stop()
	var warned version.Skew
	var waiting string
	for {
		// Caught up with the log, and nothing lowered the cluster version below this binary:
		// stop, unless a downgrade to exactly this binary is enabled (as upstream allows), which
		// the leader lowers the cluster version for (a member that joins during a downgrade can
		// get a snapshot taken before the lowering).
		if c, dg, _ := s.vers.get(); version.TooOld(s.cfg.Level, c, dg) {
			s.stopOlderBinary(c)
			return
		}
		if s.Leader() == s.id {
			s.pollPeerVersions()
			waiting = s.decideVersions(waiting)
		}
		warned = s.warnVersionSkew(warned)
		select {
		case <-t.C:
		case <-s.versionWake:
		case <-s.stopping:
			return
		}
	}
}

// decideVersions proposes what version.Cluster.Decide says the leader should, and says which
// members a downgrade or an upgrade waits for whenever that changes (lastWaiting is what it said
// last).
func (s *Server) decideVersions(lastWaiting string) string {
	c := s.versionCluster()
	d := c.Decide()
	waiting := ""
	switch {
	case len(d.WaitingFor) > 0:
		waiting = "downgrade:" + memberList(d.WaitingFor)
		if waiting != lastWaiting {
			s.log.Info("the downgrade waits for members that still run a newer binary: swap their binaries or remove them",
				"target-version", c.Downgrade.Target().String(), "members", memberList(d.WaitingFor))
		}
	case len(d.HeldBy) > 0:
		// Ours: the leader has seen a newer member and keeps the cluster version, and says for
		// whom (operators ask why it has not moved; tests wait for this decision).
		waiting = "upgrade:" + memberList(d.HeldBy)
		if waiting != lastWaiting {
			s.log.Info("the cluster version stays until every member runs a newer binary: upgrade these members",
				"cluster-version", c.Version.String(), "members", memberList(d.HeldBy))
		}
	}
	switch {
	case d.FinishDowngrade:
		s.log.Info("the cluster has been downgraded", "cluster-version", c.Version.String())
		s.proposeVersionChange(&pb.InternalRaftRequest{DowngradeInfoSet: &membershippb.DowngradeInfoSetRequest{Enabled: false}})
	case !d.SetVersion.IsZero():
		if c.Downgrade.Enabled {
			s.log.Info("lowering the cluster version for the downgrade", "from", c.Version.String(), "to", d.SetVersion.String())
		}
		s.proposeVersionChange(&pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: d.SetVersion.Full()}})
	}
	return waiting
}

// memberList is member IDs as upstream's logs write them (hex), in order, comma-separated.
func memberList(ids []uint64) string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	return strings.Join(hexIDs(sorted), ",")
}

func (s *Server) proposeVersionChange(r *pb.InternalRaftRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
	defer cancel()
	if err := s.proposeApplied(ctx, r); err != nil {
		s.log.Warn("could not change the cluster version", "error", err)
	}
}

// warnVersionSkew logs, once per situation, that this member's binary and the cluster disagree.
func (s *Server) warnVersionSkew(last version.Skew) version.Skew {
	c := s.versionCluster()
	sk := c.Skew(s.cfg.Level)
	if sk == last {
		return sk
	}
	switch {
	case sk.Behind:
		s.log.Warn(fmt.Sprintf("the local etcd version %s is not up-to-date", s.cfg.release()),
			"local-member-version", s.cfg.release(), "remote-member-version", sk.NewestVersion)
		if s.Leader() == s.id {
			// Upstream's leader says this (every second; here once per situation).
			s.log.Warn("leader found higher-versioned member", "local-member-version", s.cfg.release(),
				"remote-member-id", fmt.Sprintf("%x", sk.NewestID), "remote-member-version", sk.NewestVersion)
		}
	case sk.Ahead:
		s.log.Warn(fmt.Sprintf("the cluster version %s is lower than the local etcd version %s: features of %s stay off until every member runs it", c.Version, s.cfg.release(), s.cfg.Level),
			"cluster-version", c.Version.String(), "local-member-version", s.cfg.release())
	}
	return sk
}

// Downgrade serves Maintenance.Downgrade.
func (s *Server) Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	c := s.versionCluster()
	// Major.minor, as upstream reports the cluster version here.
	resp := &pb.DowngradeResponse{Version: c.Version.String()}
	switch r.Action {
	case pb.DowngradeRequest_VALIDATE, pb.DowngradeRequest_ENABLE:
		if err := c.ValidateDowngrade(s.cfg.Level, r.Version); err != nil {
			return nil, err
		}
		if r.Action == pb.DowngradeRequest_VALIDATE {
			return resp, nil
		}
		target, _ := version.ParseLevel(r.Version)
		if err := s.proposeApplied(ctx, &pb.InternalRaftRequest{DowngradeInfoSet: &membershippb.DowngradeInfoSetRequest{Enabled: true, Ver: target.Full()}}); err != nil {
			return nil, err
		}
		return resp, nil
	case pb.DowngradeRequest_CANCEL:
		if !c.Downgrade.Enabled {
			return nil, version.ErrNoInflightDowngrade
		}
		if err := s.proposeApplied(ctx, &pb.InternalRaftRequest{DowngradeInfoSet: &membershippb.DowngradeInfoSetRequest{Enabled: false}}); err != nil {
			return nil, err
		}
		return resp, nil
	default:
		return nil, fmt.Errorf("unknown downgrade action %d", r.Action)
	}
}
