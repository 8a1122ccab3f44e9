package stepped

import (
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/apply"
	"etcdx/server/backend"
	"etcdx/server/lease"
	"etcdx/server/mvcc"
	"etcdx/server/schema"
)

// member is one member's core: what survives a crash (disk: raft's hard state and log), raft
// itself while the member is up, and the store its applier writes. A restart opens a new store
// and applies the log again from the start: the store is rebuilt from what raft kept.
type member struct {
	id   uint64
	name string
	disk *raft.MemoryStorage
	node *raft.RawNode // nil while down

	be      *backend.Backend
	kv      *mvcc.Store
	les     *lease.Lessor
	applied uint64
	// conf is the configuration as of applied: what a snapshot taken there records.
	conf raftpb.ConfState
	// snapped is the index of the disk's newest snapshot.
	snapped uint64
	starts  int // names each store's file

	// isolated: every message to or from it is lost. removed: it applied its own removal and
	// stopped for good, as etcd's member does.
	isolated bool
	removed  bool
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

// start brings the member up on what its disk holds: the store from its newest snapshot (the
// bootstrap's is empty), raft on its log.
func (m *member) start(dir string) error {
	snap, err := m.disk.Snapshot()
	if err != nil {
		return fmt.Errorf("%s: read the disk's snapshot: %w", m.name, err)
	}
	if err := m.openStore(dir, snap.Data); err != nil {
		return err
	}
	node, err := raft.NewRawNode(raftConfig(m.id, m.disk))
	if err != nil {
		m.close()
		return fmt.Errorf("%s: start raft: %w", m.name, err)
	}
	m.node, m.applied, m.conf, m.snapped = node, snap.Metadata.Index, snap.Metadata.ConfState, snap.Metadata.Index
	return nil
}

// openStore opens a new store file holding data (a snapshot's database; empty for none).
func (m *member) openStore(dir string, data []byte) error {
	m.starts++
	path := filepath.Join(dir, fmt.Sprintf("%s.%d.db", m.name, m.starts))
	if len(data) > 0 {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return fmt.Errorf("%s: write the snapshot's database: %w", m.name, err)
		}
	}
	be, err := backend.Open(backend.Config{Path: path, Buckets: schema.Buckets, Logger: discardLog})
	if err != nil {
		return fmt.Errorf("%s: open store: %w", m.name, err)
	}
	les, err := lease.New(be, 1, nil)
	if err != nil {
		be.Close()
		return fmt.Errorf("%s: open lessor: %w", m.name, err)
	}
	kv, err := mvcc.Open(be, discardLog, les)
	if err != nil {
		be.Close()
		return fmt.Errorf("%s: open mvcc: %w", m.name, err)
	}
	m.be, m.kv, m.les = be, kv, les
	return nil
}

// install replaces the store by a snapshot's, as a member does that raft hands one.
func (m *member) install(dir string, snap raftpb.Snapshot) error {
	if err := m.disk.ApplySnapshot(snap); err != nil {
		return fmt.Errorf("%s: keep snapshot: %w", m.name, err)
	}
	m.close()
	if err := m.openStore(dir, snap.Data); err != nil {
		return err
	}
	m.applied, m.conf, m.snapped = snap.Metadata.Index, snap.Metadata.ConfState, snap.Metadata.Index
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

// crash takes the member down: raft's volatile state and the store go, the disk stays.
func (m *member) crash() {
	m.node = nil
	m.close()
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

// applied is one request the member applied: the client request's id and its answer.
type appliedReq struct {
	id   uint64
	resp *pb.ResponseOp
	err  error
}

// applyEntry applies one committed entry to the store; a request entry yields its answer.
func (m *member) applyEntry(e raftpb.Entry) (*appliedReq, error) {
	m.applied = e.Index
	switch e.Type {
	case raftpb.EntryConfChange:
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			return nil, fmt.Errorf("%s: decode conf change at %d: %w", m.name, e.Index, err)
		}
		m.conf = *m.node.ApplyConfChange(cc)
		if cc.Type == raftpb.ConfChangeRemoveNode && cc.NodeID == m.id {
			m.removed = true
		}
		return nil, nil
	case raftpb.EntryConfChangeV2:
		var cc raftpb.ConfChangeV2
		if err := cc.Unmarshal(e.Data); err != nil {
			return nil, fmt.Errorf("%s: decode conf change at %d: %w", m.name, e.Index, err)
		}
		m.conf = *m.node.ApplyConfChange(cc)
		return nil, nil
	}
	if len(e.Data) == 0 {
		return nil, nil // a new leader's empty entry
	}
	var r pb.InternalRaftRequest
	if err := r.Unmarshal(e.Data); err != nil {
		return nil, fmt.Errorf("%s: decode request at %d: %w", m.name, e.Index, err)
	}
	out := &appliedReq{}
	if r.Header != nil {
		out.id = r.Header.ID
	}
	txn := m.kv.Write()
	switch {
	case r.Put != nil:
		resp, err := apply.Put(txn, m.les, r.Put)
		out.resp, out.err = &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: resp}}, err
	case r.DeleteRange != nil:
		resp, err := apply.DeleteRange(txn, r.DeleteRange)
		out.resp, out.err = &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: resp}}, err
	case r.Txn != nil:
		resp, err := apply.Txn(txn, m.les, r.Txn)
		if errors.Is(err, apply.ErrHalfApplied) {
			txn.Abort(err)
			return nil, fmt.Errorf("%s: txn at %d: %w", m.name, e.Index, err)
		}
		out.resp, out.err = &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: resp}}, err
	default:
		txn.End()
		return nil, fmt.Errorf("%s: entry %d holds a request the stepped cluster does not send", m.name, e.Index)
	}
	if err := txn.End(); err != nil {
		return nil, fmt.Errorf("%s: commit entry %d: %w", m.name, e.Index, err)
	}
	return out, nil
}
