package etcdserver

import (
	"errors"
	"etcdx/server/fileutil"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/failpoint"
	"etcdx/server/membership"
	"etcdx/server/schema"
)

// snapDBPath is where a database received from the leader waits until its snapshot applies.
func (s *Server) snapDBPath(index uint64) string { return schema.SnapDBPath(s.cfg.DataDir, index) }

// ReceiveSnapshotDB stores the database that came with a snapshot message (transport.Raft).
func (s *Server) ReceiveSnapshotDB(index uint64, r io.Reader) error {
	path := s.snapDBPath(index)
	tmp := path + ".tmp"
	start := time.Now()
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	n, err := io.Copy(f, r)
	if err == nil {
		syncStart := time.Now()
		err = f.Sync()
		s.m.snapDBFsync.Observe(time.Since(syncStart).Seconds())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("receive snapshot database: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	failpoint.At(failpoint.SnapDBRenameBeforeDirSync)
	// The file is synced; its new name must be too before the snapshot message that needs it
	// goes on to raft, or a crash could leave a WAL that names a database the disk lost.
	if msg, ok := failpoint.Value(failpoint.SnapDBDirSyncError); ok {
		return fmt.Errorf("receive snapshot database: %w", errors.New(msg))
	}
	if err := fileutil.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("receive snapshot database: %w", err)
	}
	s.m.snapDBSave.Observe(time.Since(start).Seconds())
	s.log.Info("received database snapshot from leader", "index", index, "size", n)
	return nil
}

// sendSnapshot builds the snapshot a lagging follower needs from the current state (the apply
// goroutine calls it between batches, so the database is exactly the applied state) and streams
// it in the background.
func (s *Server) sendSnapshot(m raftpb.Message) {
	data, err := s.v2StoreDoc()
	if err != nil {
		s.log.Error("failed to build snapshot", "error", err)
		s.node.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	// The snapshot is labelled with the applied index: the database must be exactly there. Right
	// after a restart it can be further on (entries it applied before the stop are replayed, not
	// applied again, until raft hands them out): a database labelled older than it is would have
	// the follower apply its last entries twice. Raft sends the snapshot again later. (Only this
	// goroutine applies entries, so after the commit the database holds all it applied.)
	if err := s.be.Commit(); err != nil {
		s.log.Error("commit before a snapshot", "error", err)
		s.node.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	if ci, _ := s.consistentIndex(); ci != s.appliedIndex.Load() {
		s.log.Info("not sending a database snapshot while replaying the log", "to", fmt.Sprintf("%x", m.To),
			"applied-index", s.appliedIndex.Load(), "consistent-index", ci)
		s.node.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	rc, size, err := s.be.ReadSnapshot()
	if err != nil {
		s.log.Error("open database for snapshot", "error", err)
		s.node.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	m.Snapshot = &raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{
		Index: s.appliedIndex.Load(), Term: s.appliedTerm, ConfState: s.confState}}
	s.log.Info("sending database snapshot", "to", fmt.Sprintf("%x", m.To), "index", m.Snapshot.Metadata.Index, "size", size)
	s.snapshotsInFlight.Add(1)
	go func() {
		defer s.snapshotsInFlight.Add(-1)
		s.tr.SendSnapshot(m, rc)
	}()
}

// installSnapshot swaps in the database received with a snapshot and reloads everything that
// lives in it.
func (s *Server) installSnapshot(sn raftpb.Snapshot) error {
	s.m.snapshotApplying.Set(1)
	defer s.m.snapshotApplying.Set(0)
	path := s.snapDBPath(sn.Metadata.Index)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("database for snapshot %d: %w", sn.Metadata.Index, err)
	}
	// upstream's events around the swap, which its tests and operators' scripts wait for
	s.log.Info("applying snapshot", "current-snapshot-index", s.snapIndex, "current-applied-index", s.appliedIndex.Load(),
		"incoming-leader-snapshot-index", sn.Metadata.Index, "incoming-leader-snapshot-term", sn.Metadata.Term)
	failpoint.At(failpoint.ApplyBeforeOpenSnapshot)
	if err := s.be.ReplaceWith(path); err != nil {
		return err
	}
	s.log.Info("applySnapshot: opened snapshot backend")
	failpoint.At(failpoint.ApplyAfterOpenSnapshot)
	if err := s.alignReceivedStorage(); err != nil {
		return err
	}
	if err := s.reloadState(); err != nil {
		return err
	}
	if s.v2 != nil {
		if err := s.v2.Recover(sn.Data); err != nil {
			return fmt.Errorf("v2 store in snapshot %d: %w", sn.Metadata.Index, err)
		}
	}
	s.appliedIndex.Store(sn.Metadata.Index)
	s.appliedTerm = sn.Metadata.Term
	s.snapIndex = sn.Metadata.Index
	s.memSnapIndex, s.memSnapBytes = sn.Metadata.Index, 0
	s.confState = sn.Metadata.ConfState
	s.log.Info("applied snapshot", "snapshot-index", sn.Metadata.Index, "revision", s.kv.Rev())
	return nil
}

// reloadState rereads leases, keys, members and alarms from the backend.
func (s *Server) reloadState() error {
	if err := s.les.Reload(); err != nil {
		return err
	}
	if err := s.kv.Reload(); err != nil {
		return err
	}
	mem, err := membership.Load(s.be, s.mem.ClusterID())
	if err != nil {
		return err
	}
	s.m.v2StoreRead("getRecursive") // as the v2 store's recovery from a snapshot
	s.mem.Replace(mem)
	for _, m := range s.mem.List() {
		s.tr.AddPeer(m.ID, m.PeerURLs)
	}
	alarms, err := loadAlarms(s.be)
	if err != nil {
		return err
	}
	s.alarms.replace(alarms)
	if err := s.reloadAuth(); err != nil {
		return err
	}
	vs, err := loadVersionState(s.be)
	if err != nil {
		return err
	}
	s.vers.replace(vs)
	s.m.setClusterVersion(s.ClusterVersion())
	return nil
}
