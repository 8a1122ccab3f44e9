package stepped

import (
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/apply"
	"etcdx/server/backend"
	"etcdx/server/compactor"
	"etcdx/server/lease"
	"etcdx/server/mvcc"
	"etcdx/server/schema"
	"etcdx/server/version"
)

// member is one member's core: what survives a crash (disk: raft's hard state and log, and
// the database file as of its last commit), raft itself while the member is up, and the store
// its applier writes. The store commits on the member's ticks (the batch interval); a crash
// loses what it applied since, and a restart applies the log again from the consistent index
// the file holds, as etcd does.
type member struct {
	id   uint64
	name string
	disk *raft.MemoryStorage
	node *raft.RawNode // nil while down
	path string        // the database file
	now  func() time.Time

	be      *backend.Backend
	kv      *mvcc.Store
	les     *lease.Lessor
	applied uint64
	// replayedTo is the consistent index the file held at start: entries up to it are in the
	// store already, and only their configuration changes are applied again (to raft).
	replayedTo uint64
	// conf is the configuration as of applied: what a snapshot taken there records.
	conf raftpb.ConfState
	// snapped is the index of the disk's newest snapshot.
	snapped uint64
	// leading: the lessor judges expiry (promoted when raft made the member leader).
	leading bool
	// readyAt is the last index of its log at start: a member reports its cluster version once
	// it has applied that far (etcd's member is ready once the entries it had are applied: what
	// it shows before may be older than what it showed before a crash).
	readyAt uint64
	ready   bool
	// compaction is its auto-compaction rule (etcd's periodic mode), asked while it leads.
	compaction compactor.Retention
	// reads are keep-alives waiting for their read index to confirm the leadership and for the
	// member to apply up to it, by request id.
	reads map[uint64]uint64

	// bin is the level the member's binary runs as; cv the cluster version its store holds
	// (zero before the leader's first decision).
	bin, cv version.Level

	// isolated: every message to or from it is lost. removed: it applied its own removal and
	// stopped for good, as etcd's member does.
	isolated bool
	removed  bool
	// indexFirst is the planted bug of Options.IndexFirst.
	indexFirst bool
	// sawChange is the configuration change it applied last (nil: none since the harness looked).
	sawChange *raftpb.ConfChange
}

// raftConfig is what etcd runs raft with (pre-vote, check-quorum), ticks counted by the harness.
func raftConfig(id uint64, disk *raft.MemoryStorage) *raft.Config {
	return &raft.Config{
		ID:              id,
		ElectionTick:    10,
		HeartbeatTick:   1,
		Storage:         disk,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 256,
		CheckQuorum:     true,
		PreVote:         true,
		Logger:          &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
	}
}

// start brings the member up on what its disk holds: the database file as last committed (the
// snapshot's database when the file is new), raft on its log from the disk's snapshot.
func (m *member) start() error {
	snap, err := m.disk.Snapshot()
	if err != nil {
		return fmt.Errorf("%s: read the disk's snapshot: %w", m.name, err)
	}
	if _, err := os.Stat(m.path); errors.Is(err, os.ErrNotExist) && len(snap.Data) > 0 {
		if err := writeFile(m.path, snap.Data); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	if err := m.openStore(); err != nil {
		return err
	}
	ci, cv, err := m.readState()
	if err != nil {
		m.close()
		return err
	}
	if version.TooOld(m.bin, cv, version.DowngradeInfo{}) {
		// As etcd's start-up check: a binary below the cluster version does not start.
		m.close()
		return errTooOld
	}
	if ci < snap.Metadata.Index && len(snap.Data) > 0 {
		m.close()
		return fmt.Errorf("%s: the database holds index %d, before the disk's snapshot at %d", m.name, ci, snap.Metadata.Index)
	}
	node, err := raft.NewRawNode(raftConfig(m.id, m.disk))
	if err != nil {
		m.close()
		return fmt.Errorf("%s: start raft: %w", m.name, err)
	}
	m.node, m.applied, m.conf, m.snapped = node, snap.Metadata.Index, snap.Metadata.ConfState, snap.Metadata.Index
	m.replayedTo, m.leading, m.reads, m.cv = ci, false, map[uint64]uint64{}, cv
	m.compaction = compactor.Retention{Period: compactPeriod}
	if m.readyAt, err = m.disk.LastIndex(); err != nil {
		m.close()
		return fmt.Errorf("%s: read the log's last index: %w", m.name, err)
	}
	m.ready = false
	return nil
}

// readState is what the store's file says was applied: the consistent index and the cluster
// version.
func (m *member) readState() (ci uint64, cv version.Level, err error) {
	err = m.be.View(func(tx *bolt.Tx) error {
		ci, _ = schema.ReadConsistentIndex(tx)
		var err error
		cv, err = schema.ReadClusterVersion(tx)
		return err
	})
	if err != nil {
		err = fmt.Errorf("%s: read the consistent index and the cluster version: %w", m.name, err)
	}
	return ci, cv, err
}

// errTooOld: the member's binary is below the cluster version its data holds.
var errTooOld = errors.New("the binary is below the cluster version")

// writeFile replaces path by data, as a received snapshot's database is put in place (renamed
// over it whole).
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write the snapshot's database: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write the snapshot's database: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the snapshot's database: %w", err)
	}
	return os.Rename(tmp, path)
}

// openStore opens the member's database file; nothing commits it but the member's ticks.
func (m *member) openStore() error {
	be, err := backend.Open(backend.Config{Path: m.path, Buckets: schema.Buckets, Logger: discardLog, BatchInterval: -1})
	if err != nil {
		return fmt.Errorf("%s: open store: %w", m.name, err)
	}
	les, err := lease.New(be, 1, m.now)
	if err != nil {
		be.Close()
		return fmt.Errorf("%s: open lessor: %w", m.name, err)
	}
	kv, err := mvcc.Open(be, discardLog, les)
	if err != nil {
		be.Close()
		return fmt.Errorf("%s: open mvcc: %w", m.name, err)
	}
	// Compactions go a batch per tick of the member's, as the clock paces them.
	kv.Stepped()
	kv.SetCompactionPace(compactionBatch, 0)
	m.be, m.kv, m.les = be, kv, les
	return nil
}

// compactionBatch is how many revisions a member's compaction cleans per tick (etcd's
// --compaction-batch-limit, scaled to the run's store).
const compactionBatch = 10

// install replaces the store by a snapshot's, as a member does that raft hands one.
func (m *member) install(snap raftpb.Snapshot) error {
	if err := m.disk.ApplySnapshot(snap); err != nil {
		return fmt.Errorf("%s: keep snapshot: %w", m.name, err)
	}
	m.close()
	if err := writeFile(m.path, snap.Data); err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	if err := m.openStore(); err != nil {
		return err
	}
	var err error
	if _, m.cv, err = m.readState(); err != nil {
		return err
	}
	m.applied, m.conf, m.snapped, m.replayedTo = snap.Metadata.Index, snap.Metadata.ConfState, snap.Metadata.Index, snap.Metadata.Index
	if m.leading {
		m.les.Promote(electionTimeout)
	}
	return nil
}

// snapshot is the member's state as of what it applied, as etcd sends a follower that needs one:
// the whole database, and the configuration then.
func (m *member) snapshot() (raftpb.Snapshot, error) {
	if err := m.be.Commit(); err != nil {
		return raftpb.Snapshot{}, fmt.Errorf("%s: commit before a snapshot: %w", m.name, err)
	}
	rc, _, err := m.be.ReadSnapshot()
	if err != nil {
		return raftpb.Snapshot{}, fmt.Errorf("%s: read the database: %w", m.name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return raftpb.Snapshot{}, fmt.Errorf("%s: read the database: %w", m.name, err)
	}
	term, err := m.disk.Term(m.applied)
	if err != nil {
		return raftpb.Snapshot{}, fmt.Errorf("%s: term at %d: %w", m.name, m.applied, err)
	}
	return raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{Index: m.applied, Term: term, ConfState: m.conf}}, nil
}

// compact keeps a snapshot at what the member applied and drops the log before keep entries
// back, as etcd does every --snapshot-count entries.
func (m *member) compact(keep uint64) error {
	snap, err := m.snapshot()
	if err != nil {
		return err
	}
	if _, err := m.disk.CreateSnapshot(snap.Metadata.Index, &snap.Metadata.ConfState, snap.Data); err != nil {
		return fmt.Errorf("%s: keep snapshot at %d: %w", m.name, snap.Metadata.Index, err)
	}
	m.snapped = snap.Metadata.Index
	if m.applied > keep {
		if err := m.disk.Compact(m.applied - keep); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("%s: compact the log: %w", m.name, err)
		}
	}
	return nil
}

// crash takes the member down: raft's volatile state and what the store applied since its last
// commit go; the disk and the file as committed stay.
func (m *member) crash() {
	m.node = nil
	if m.kv != nil {
		m.kv.Close()
		m.be.Crash()
		m.kv, m.be, m.les = nil, nil, nil
	}
}

func (m *member) close() {
	if m.kv != nil {
		m.kv.Close()
		m.be.Close()
		m.kv, m.be, m.les = nil, nil, nil
	}
}

func (m *member) up() bool { return m.node != nil }

var discardLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// appliedReq is one request the member applied: the client request's id and its answer, and
// for a lease's revoke that deleted keys, which lease.
type appliedReq struct {
	id      uint64
	resp    *pb.ResponseOp
	err     error
	revoked int64
	rev     int64
	// version: it set the cluster version.
	version bool
	// compacted is the revision a compaction it applied compacted at.
	compacted int64
}

// applyEntry applies one committed entry to the store, the consistent index in the same batch;
// a request entry yields its answer. An entry the file already holds only gives raft its
// configuration change again.
func (m *member) applyEntry(e raftpb.Entry) (*appliedReq, error) {
	m.applied = e.Index
	switch e.Type {
	case raftpb.EntryConfChange:
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			return nil, fmt.Errorf("%s: decode conf change at %d: %w", m.name, e.Index, err)
		}
		m.conf = *m.node.ApplyConfChange(cc)
		if cc.Type == raftpb.ConfChangeRemoveNode {
			m.removed = m.removed || cc.NodeID == m.id
		}
		m.sawChange = &cc
		return nil, m.keepIndex(e)
	case raftpb.EntryConfChangeV2:
		return nil, fmt.Errorf("%s: entry %d is a v2 configuration change, which etcd does not propose", m.name, e.Index)
	}
	if len(e.Data) == 0 || e.Index <= m.replayedTo {
		return nil, m.keepIndex(e) // a new leader's empty entry, or one the file holds
	}
	var r pb.InternalRaftRequest
	if err := r.Unmarshal(e.Data); err != nil {
		return nil, fmt.Errorf("%s: decode request at %d: %w", m.name, e.Index, err)
	}
	out := &appliedReq{}
	if r.Header != nil {
		out.id = r.Header.ID
	}
	if m.indexFirst {
		if err := m.keepIndex(e); err != nil {
			return nil, err
		}
		if err := m.be.Commit(); err != nil {
			return nil, fmt.Errorf("%s: commit: %w", m.name, err)
		}
	}
	b := m.be.Batch()
	// Persisted, as from cluster version 3.6 on.
	if res, ok := apply.Apply(b, m.kv, m.les, &r, true); ok {
		if errors.Is(res.Err, apply.ErrHalfApplied) {
			b.Unlock()
			return nil, fmt.Errorf("%s: txn at %d: %w", m.name, e.Index, res.Err)
		}
		out.resp, out.err = asOp(res.Resp), res.Err
		switch {
		case res.Err != nil:
		case r.Compaction != nil:
			out.compacted = r.Compaction.Revision
		case r.LeaseRevoke != nil && res.Changes > 0:
			out.revoked, out.rev = r.LeaseRevoke.ID, res.Resp.(*pb.LeaseRevokeResponse).Header.Revision
		}
		return out, m.endBatch(b, e, nil)
	}
	if r.ClusterVersionSet == nil {
		b.Unlock()
		return nil, fmt.Errorf("%s: entry %d holds a request the stepped cluster does not send", m.name, e.Index)
	}
	l, err := version.ParseLevel(r.ClusterVersionSet.Ver)
	if err == nil {
		err = schema.PutClusterVersion(b, l)
	}
	if out.err = err; err == nil {
		m.cv, out.version = l, true
	}
	if err := m.endBatch(b, e, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// asOp wraps a key request's answer as a txn's op answer (the form the clients read); the other
// kinds' answers are none.
func asOp(resp any) *pb.ResponseOp {
	switch r := resp.(type) {
	case *pb.PutResponse:
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: r}}
	case *pb.DeleteRangeResponse:
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: r}}
	case *pb.TxnResponse:
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: r}}
	}
	return nil
}

// endBatch records e as applied in the batch its changes went into (err: they failed) and
// releases the batch.
func (m *member) endBatch(b *backend.BatchTx, e raftpb.Entry, err error) error {
	if err == nil {
		err = schema.PutConsistentIndex(b, e.Index, e.Term)
	}
	if uerr := b.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("%s: apply entry %d: %w", m.name, e.Index, err)
	}
	return nil
}

// keepIndex records an entry with nothing for the store as applied, so a restart starts after it.
func (m *member) keepIndex(e raftpb.Entry) error {
	if e.Index <= m.replayedTo {
		return nil
	}
	return m.endBatch(m.be.Batch(), e, nil)
}
