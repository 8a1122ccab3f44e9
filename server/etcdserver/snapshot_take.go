package etcdserver

import (
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/failpoint"
	"etcdx/server/membership"
	"etcdx/server/snap"
)

// snapshotDue says whether the apply goroutine takes a snapshot at applied, and whether it goes to
// disk: every count entries after the last on disk (or when one is forced), and in memory once
// memorySnapshotEvery entries or memorySnapshotBytes of entry data were applied since the last
// one (memBytes).
func snapshotDue(applied, diskIndex, memIndex, memBytes, count uint64, forced bool) (toDisk, due bool) {
	// As upstream: once more than count entries were applied since the last one.
	toDisk = applied-diskIndex > count || forced && applied > diskIndex
	sinceMem := applied - memIndex
	return toDisk, toDisk || sinceMem >= memorySnapshotEvery || sinceMem > 0 && memBytes >= memorySnapshotBytes
}

// Snapshots in memory let the raft log be trimmed to the last SnapshotCatchUpEntries entries.
// Trimming only at the snapshots on disk (every SnapshotCount entries) kept up to three times
// as many entries in memory as upstream 3.6 does. Upstream trims every 100 entries; each trim
// copies the whole kept tail (5,000 entries) to a new slice, which was a third of all the
// memory a put allocated. Every 1,000 entries costs a tenth of that and keeps at most 1,000
// small entries more; the byte bound keeps large entries (transactions of many puts) from
// holding more than a few MiB more.
const (
	memorySnapshotEvery = 1000
	memorySnapshotBytes = 4 << 20
)

// snapshot records in the raft log's memory that the state up to index is applied, and trims
// the log before it to the tail kept for slow followers. toDisk also has the snapshot written
// to disk (saveSnapshotToDisk).
func (s *Server) snapshot(index uint64, toDisk bool) error {
	forced := s.forceSnapshot
	if toDisk {
		s.log.Info("triggering snapshot", "local-member-id", fmt.Sprintf("%x", s.id), "local-member-applied-index", index,
			"local-member-snapshot-index", s.snapIndex, "local-member-snapshot-count", s.cfg.SnapshotCount,
			"snapshot-forced", forced)
		s.forceSnapshot = false
	}
	data, err := s.v2StoreDoc()
	if err != nil {
		return err
	}
	sn, err := s.storage.CreateSnapshot(index, &s.confState, data)
	if errors.Is(err, raft.ErrSnapOutOfDate) {
		// A snapshot at this index is already in memory (a forced snapshot right after one).
		sn, err = s.storage.Snapshot()
		if err == nil && sn.Metadata.Index != index {
			err = fmt.Errorf("raft log holds a snapshot at %d, after the applied index %d", sn.Metadata.Index, index)
		}
	}
	if err != nil {
		return fmt.Errorf("create snapshot: %w", err)
	}
	s.memSnapIndex, s.memSnapBytes = index, 0
	if toDisk {
		// Written by snapshotSaver, so applying goes on during the three fsyncs (database,
		// snapshot file, WAL) that stalled it every SnapshotCount entries. A forced snapshot
		// (after a downgrade of the cluster version, before the member may be replaced by an
		// older binary) is written here, before anything else applies.
		if forced {
			if err := s.saveSnapshotToDisk(sn); err != nil {
				return err
			}
		} else {
			select {
			case s.snapJobs <- snapJob{sn: sn}:
			case <-s.stopping:
				return ErrStopped
			}
		}
		s.snapIndex = index
	}
	return s.trimRaftLog(index)
}

// trimRaftLog drops the raft log's entries in memory up to SnapshotCatchUpEntries before index,
// unless a database is being sent to a follower.
func (s *Server) trimRaftLog(index uint64) error {
	if s.snapshotsInFlight.Load() > 0 {
		s.log.Info("skip compaction since there is an inflight snapshot")
		return nil
	}
	if index <= s.cfg.SnapshotCatchUpEntries {
		return nil
	}
	compactTo := index - s.cfg.SnapshotCatchUpEntries
	if err := s.storage.Compact(compactTo); err != nil {
		if errors.Is(err, raft.ErrCompacted) {
			return nil
		}
		return fmt.Errorf("compact raft log: %w", err)
	}
	s.log.Debug("compacted Raft logs", "compact-index", compactTo) // debug, as upstream 3.6
	return nil
}

// snapJob is a snapshot for snapshotSaver to write.
type snapJob struct{ sn raftpb.Snapshot }

// snapshotSaver writes the apply goroutine's snapshots to disk, one at a time. One asked for
// before the member stops is still written.
func (s *Server) snapshotSaver() {
	save := func(j snapJob) {
		if err := s.saveSnapshotToDisk(j.sn); err != nil {
			s.log.Error("failed to save snapshot to disk", "snapshot-index", j.sn.Metadata.Index, "error", err)
		}
	}
	for {
		select {
		case j := <-s.snapJobs:
			save(j)
		case <-s.stopping:
			select {
			case j := <-s.snapJobs:
				save(j)
			default:
			}
			return
		}
	}
}

// saveSnapshotToDisk makes the state up to sn's index durable in the database, writes the
// snapshot file and its WAL record, and lets the WAL segments and snapshot files it supersedes
// go. The database commit comes first: the WAL before the snapshot may only go once the
// database holds what it described (it may hold more: applying went on meanwhile).
func (s *Server) saveSnapshotToDisk(sn raftpb.Snapshot) error {
	s.snapFileMu.Lock()
	defer s.snapFileMu.Unlock()
	index := sn.Metadata.Index
	if index <= s.savedSnapIndex {
		return nil // a newer snapshot (one received from the leader) is already on disk
	}
	start := time.Now()
	if err := s.be.Commit(); err != nil {
		return err
	}
	if err := s.saveSnap(sn); err != nil {
		return err
	}
	failpoint.At(failpoint.RaftBeforeWALSaveSnaphot)
	if err := s.wal.SaveSnapshot(sn.Metadata); err != nil {
		return err
	}
	s.savedSnapIndex = index
	if err := s.wal.ReleaseTo(index); err != nil {
		return err
	}
	s.log.Info("saved snapshot to disk", "snapshot-index", index)
	if err := snap.Purge(s.cfg.snapDir(), s.cfg.MaxSnapshots); err != nil {
		return err
	}
	s.m.snapshotSave.Observe(time.Since(start).Seconds())
	return nil
}

// saveReceivedSnapshot writes a snapshot received from the leader, and its WAL record, before
// the raft goroutine saves what follows it.
func (s *Server) saveReceivedSnapshot(sn raftpb.Snapshot) error {
	s.snapFileMu.Lock()
	defer s.snapFileMu.Unlock()
	if err := s.saveSnap(sn); err != nil {
		return err
	}
	failpoint.At(failpoint.RaftBeforeWALSaveSnaphot)
	if err := s.wal.SaveSnapshot(sn.Metadata); err != nil {
		return err
	}
	s.savedSnapIndex = max(s.savedSnapIndex, sn.Metadata.Index)
	return nil
}

// v2StoreDoc is the data of a raft snapshot taken now: the membership and cluster version as
// upstream's v2-store document.
func (s *Server) v2StoreDoc() ([]byte, error) {
	if s.v2 != nil {
		return s.v2StoreDocAt35()
	}
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

// saveSnap writes a raft snapshot file, with its metrics.
func (s *Server) saveSnap(sn raftpb.Snapshot) error {
	tm, err := snap.SaveTimed(s.cfg.snapDir(), sn)
	if err == nil {
		s.m.snapMarshal.Observe(tm.Marshal.Seconds())
		s.m.snapFsync.Observe(tm.Fsync.Seconds())
	}
	return err
}
