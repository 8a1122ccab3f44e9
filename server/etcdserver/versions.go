package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"
	"google.golang.org/protobuf/encoding/protowire"

	"etcdx/server/backend"
	"etcdx/server/schema"
	"etcdx/server/version"
)

// Downgrade errors, with upstream's texts.
var (
	ErrInvalidDowngradeTarget = errors.New("etcdserver: invalid downgrade target version")
	ErrWrongDowngradeFormat   = errors.New("etcdserver: wrong downgrade target version format")
	ErrDowngradeInProcess     = errors.New("etcdserver: cluster has a downgrade job in progress")
	ErrNoInflightDowngrade    = errors.New("etcdserver: no inflight downgrade job")
	ErrClusterVersionUnknown  = errors.New("etcdserver: cluster version not found during downgrade")
)

// PreconditionError is a refusal because of the cluster's state (gRPC FailedPrecondition).
type PreconditionError struct{ Msg string }

func (e *PreconditionError) Error() string { return e.Msg }

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
		if b := tx.Bucket(backend.Cluster); b != nil {
			if raw := b.Get(backend.ClusterClusterVersion); raw != nil {
				if vs.cluster, err = version.ParseLevel(string(raw)); err != nil {
					return fmt.Errorf("unreadable cluster version in the cluster bucket: %w", err)
				}
			}
			if raw := b.Get(backend.ClusterDowngrade); raw != nil {
				if err := json.Unmarshal(raw, &vs.downgrade); err != nil {
					return fmt.Errorf("unreadable downgrade info in the cluster bucket: %w", err)
				}
			}
		}
		return nil
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

// checkStorageAndCluster refuses data this binary must not run on: a storage schema newer than the
// binary, or a cluster version it may not join (see version.CheckRun).
func checkStorageAndCluster(vs *versionState, dataDir string) error {
	cluster, dg, storage := vs.get()
	local := version.Local()
	if local.Less(storage) {
		return fmt.Errorf("the data in %s has storage version %s, newer than this etcd %s: start it with an etcd %s binary, or first run 'etcdutl migrate --data-dir %s --target-version %s' (etcdutl %s)",
			dataDir, storage, version.Version, storage, dataDir, local, storage)
	}
	if err := version.CheckRun(local, cluster, dg); err != nil {
		return fmt.Errorf("cannot start on the data in %s: %w", dataDir, err)
	}
	return nil
}

// ClusterVersion is the replicated cluster version (zero before the first decision).
func (s *Server) ClusterVersion() version.Level {
	c, _, _ := s.vers.get()
	return c
}

// StorageVersion is the schema level of this member's backend. A 3.5 binary has no notion of it
// and reports zero, as upstream 3.5 reports nothing.
func (s *Server) StorageVersion() version.Level {
	if !version.StorageVersion.Built() {
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

// memberVersionField extends upstream's membershippb.Attributes with the publishing member's
// server version: an extra protobuf field that upstream's decoder keeps aside and ignores, so the
// cluster version is computed from replicated state instead of polling members.
const memberVersionField = 1000

func memberAttrs(id uint64, name string, urls []string) *membershippb.ClusterMemberAttrSetRequest {
	a := &membershippb.Attributes{Name: name, ClientUrls: urls}
	a.XXX_unrecognized = protowire.AppendString(protowire.AppendTag(nil, memberVersionField, protowire.BytesType), version.Version)
	return &membershippb.ClusterMemberAttrSetRequest{Member_ID: id, MemberAttributes: a}
}

// attrsVersion returns the server version carried by memberAttrs, or "" if there is none.
func attrsVersion(a *membershippb.Attributes) string {
	b := a.XXX_unrecognized
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if num == memberVersionField && typ == protowire.BytesType {
			v, m := protowire.ConsumeString(b)
			if m < 0 {
				return ""
			}
			return v
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return ""
		}
		b = b[m:]
	}
	return ""
}

// applyClusterVersion records a new cluster version and moves this member's storage with it.
func (s *Server) applyClusterVersion(b *backend.BatchTx, ver string) *applyResult {
	nv, err := version.ParseLevel(ver)
	if err != nil {
		return &applyResult{err: fmt.Errorf("cluster version %q: %w", ver, err)}
	}
	local := version.Local()
	if local.Less(nv) {
		// The leader raised the cluster version past this binary (it had not yet seen this member
		// restart with an older binary). Running on would mean running an unknown level.
		s.log.Error("the cluster version is newer than this binary; stopping", "cluster-version", nv.String(), "local-version", version.Version)
		go s.Stop()
		return &applyResult{err: fmt.Errorf("cluster version %s is newer than this binary %s", nv, version.Version)}
	}
	if err := b.Put(backend.Cluster, backend.ClusterClusterVersion, []byte(nv.Full())); err != nil {
		return &applyResult{err: err}
	}
	s.vers.mu.Lock()
	old := s.vers.cluster
	s.vers.cluster = nv
	s.vers.mu.Unlock()
	if old != nv {
		if old.IsZero() {
			s.log.Info("set the initial cluster version", "cluster-version", nv.String())
		} else {
			s.log.Info(fmt.Sprintf("updated the cluster version from %s to %s", old, nv), "from", old.String(), "to", nv.String())
		}
		s.m.setClusterVersion(nv)
	}
	if err := s.followStorage(b); err != nil {
		return &applyResult{err: err}
	}
	return &applyResult{}
}

// followStorage moves the storage version to the cluster version (never above this binary), in
// the batch of the entry that changed the cluster version.
func (s *Server) followStorage(b *backend.BatchTx) error {
	if !version.StorageVersion.Built() {
		return nil
	}
	cluster, dg, storage := s.vers.get()
	if cluster.IsZero() {
		return nil
	}
	want := cluster
	if version.Local().Less(want) {
		want = version.Local()
	}
	if want.Less(version.V3_5) {
		want = version.V3_5
	}
	if want != storage {
		from, done, err := schema.Migrate(b.Tx(), want)
		if err != nil {
			return err
		}
		s.vers.mu.Lock()
		s.vers.storage = want
		s.vers.mu.Unlock()
		s.log.Info("migrated storage version", "from", from.String(), "to", want.String(), "actions", done)
	}
	if dg.Enabled && dg.Target() == cluster && want == cluster {
		s.log.Info("the member is ready to be downgraded", "target-version", dg.Target().String(), "storage-version", want.String(), "server-version", version.Version)
	}
	return nil
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
	raw, err := json.Marshal(dg)
	if err != nil {
		return &applyResult{err: err}
	}
	if err := b.Put(backend.Cluster, backend.ClusterDowngrade, raw); err != nil {
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
	t := time.NewTicker(time.Second)
	defer t.Stop()
	warned := ""
	for {
		if s.Leader() == s.id {
			s.decideVersions()
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

// decideVersions is the leader's job: cluster version = the lowest member level (only ever raised),
// or the downgrade target while a downgrade is enabled.
func (s *Server) decideVersions() {
	cluster, dg, _ := s.vers.get()
	members := s.mem.list()
	var lowest version.Level
	for _, m := range members {
		if m.ServerVersion == "" {
			return // a member that never started: undecided, as upstream
		}
		l, err := version.ParseLevel(m.ServerVersion)
		if err != nil {
			return
		}
		if lowest.IsZero() || l.Less(lowest) {
			lowest = l
		}
	}
	if lowest.IsZero() {
		return
	}
	switch {
	case dg.Enabled:
		target := dg.Target()
		if cluster != target {
			s.log.Info("lowering the cluster version for the downgrade", "from", cluster.String(), "to", target.String())
			s.proposeVersionChange(&pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: target.Full()}})
			return
		}
		for _, m := range members {
			if l, _ := version.ParseLevel(m.ServerVersion); l != target {
				return
			}
		}
		s.log.Info("the cluster has been downgraded", "cluster-version", target.String())
		s.proposeVersionChange(&pb.InternalRaftRequest{DowngradeInfoSet: &membershippb.DowngradeInfoSetRequest{Enabled: false}})
	case cluster.IsZero() || cluster.Less(lowest):
		s.proposeVersionChange(&pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: lowest.Full()}})
	}
}

func (s *Server) proposeVersionChange(r *pb.InternalRaftRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout())
	defer cancel()
	if err := s.proposeApplied(ctx, r); err != nil {
		s.log.Warn("could not change the cluster version", "error", err)
	}
}

// warnVersionSkew logs, once per situation, that this member's binary and the cluster disagree.
func (s *Server) warnVersionSkew(last string) string {
	cluster, dg, _ := s.vers.get()
	local := version.Local()
	var newest version.Level
	var newestVer string
	for _, m := range s.mem.list() {
		if l, err := version.ParseLevel(m.ServerVersion); err == nil && newest.Less(l) {
			newest, newestVer = l, m.ServerVersion
		}
	}
	now := ""
	switch {
	case local.Less(newest) && !dg.Enabled:
		now = "old:" + newestVer
		if now != last {
			s.log.Warn(fmt.Sprintf("the local etcd version %s is not up-to-date", version.Version),
				"local-member-version", version.Version, "remote-member-version", newestVer)
		}
	case !cluster.IsZero() && cluster.Less(local) && !dg.Enabled:
		now = "ahead:" + cluster.String()
		if now != last {
			s.log.Warn(fmt.Sprintf("the cluster version %s is lower than the local etcd version %s: features of %s stay off until every member runs it", cluster, version.Version, local),
				"cluster-version", cluster.String(), "local-member-version", version.Version)
		}
	}
	return now
}

// Downgrade serves Maintenance.Downgrade.
func (s *Server) Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	cluster, dg, _ := s.vers.get()
	// Major.minor, as upstream reports the cluster version here.
	resp := &pb.DowngradeResponse{Version: cluster.String()}
	switch r.Action {
	case pb.DowngradeRequest_VALIDATE, pb.DowngradeRequest_ENABLE:
		if err := s.validateDowngrade(r.Version, cluster, dg); err != nil {
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
		if !dg.Enabled {
			return nil, ErrNoInflightDowngrade
		}
		if err := s.proposeApplied(ctx, &pb.InternalRaftRequest{DowngradeInfoSet: &membershippb.DowngradeInfoSetRequest{Enabled: false}}); err != nil {
			return nil, err
		}
		return resp, nil
	default:
		return nil, fmt.Errorf("unknown downgrade action %d", r.Action)
	}
}

// validateDowngrade accepts only a target exactly one minor below the cluster version, that this
// tree implements, when no downgrade is under way and every member's version is known (a member
// that never started would otherwise stall the downgrade).
func (s *Server) validateDowngrade(target string, cluster version.Level, dg version.DowngradeInfo) error {
	t, err := version.ParseLevel(target)
	if err != nil {
		return ErrWrongDowngradeFormat
	}
	if dg.Enabled {
		return ErrDowngradeInProcess
	}
	if cluster.IsZero() {
		return ErrClusterVersionUnknown
	}
	if !version.Downgrade.On(cluster) || t != cluster.Prev() || !version.IsKnown(t) {
		return ErrInvalidDowngradeTarget
	}
	for _, m := range s.mem.list() {
		if m.ServerVersion == "" {
			return &PreconditionError{fmt.Sprintf("etcdserver: member %x has never started, so its version is unknown; start or remove it before downgrading", m.ID)}
		}
	}
	return nil
}

// downgradeEnabledPath answers "true" or "false" on the peer port, as upstream's does.
const downgradeEnabledPath = "/downgrade/enabled"

func (s *Server) serveDowngradeEnabled(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprint(w, strconv.FormatBool(s.DowngradeInfo().Enabled))
}
