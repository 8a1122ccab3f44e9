package etcdserver

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/failpoint"
)

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
			s.batcher.loopBusy()
			if !s.handleReady(rd, &st) {
				return
			}
			failpoint.At(failpoint.RaftBeforeAdvance)
			s.node.Advance()
			s.batcher.loopFree()
			// Let the request goroutines run before the next Ready: on a member with one CPU
			// (GOMAXPROCS=1) the loop otherwise took the next Ready at once, with the one or two
			// proposals made meanwhile, and paid an fsync for each (1.4 entries per WAL fsync
			// against upstream's 12.5 in a traced txn workload; 13 with the yield). On more CPUs
			// it costs a scheduler call.
			runtime.Gosched()
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
	if st.leader && len(rd.Entries) > 0 {
		s.batcher.appended(rd.Entries[len(rd.Entries)-1].Index, sendsAppends(msgs))
	}
	if sendEarly {
		failpoint.At(failpoint.RaftBeforeLeaderSend)
		s.peerStats.sending(msgs, time.Now())
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
		failpoint.At(failpoint.RaftBeforeSaveSnap)
		if err := s.saveReceivedSnapshot(rd.Snapshot); err != nil {
			s.fatal("failed to save Raft snapshot", err)
			return false
		}
		failpoint.At(failpoint.RaftAfterSaveSnap)
	}
	// Upstream 3.5's point for a WAL write the apply waits for: its raft commits a lone member's
	// entries in the Ready that brings them; ours commits them in the next, once written, so on a
	// lone member every write of entries is one the apply waits for. (Only failpoint builds ask;
	// the point is nothing in a release build.)
	if failpoint.Enabled && (len(rest) > 0 || st.leader && len(rd.Entries) > 0 && s.mem.Count() == 1) {
		failpoint.At(failpoint.RaftBeforeSaveWaitWalSync)
	}
	failpoint.At(failpoint.RaftBeforeSave)
	if err := s.wal.Save(rd.HardState, rd.Entries); err != nil {
		s.fatal("failed to save Raft hard state and entries", err)
		return false
	}
	failpoint.At(failpoint.RaftAfterSave)
	if !raft.IsEmptyHardState(rd.HardState) {
		st.saved = rd.HardState
	}
	if hasSnap {
		// The hard state saved with a snapshot moves only the commit index, which Save does not
		// sync; unsynced, a crash leaves the WAL's commit behind the snapshot the database now
		// holds, and the member cannot start (upstream syncs here too: etcd-io/etcd#10219). The
		// simulation found it: a joined member's graceful stop lost the record.
		if err := s.wal.Sync(); err != nil {
			s.fatal("failed to sync the WAL after a Raft snapshot", err)
			return false
		}
		failpoint.At(failpoint.RaftBeforeApplySnap)
		if err := s.storage.ApplySnapshot(rd.Snapshot); err != nil {
			s.fatal("failed to apply the incoming snapshot to raft storage", err)
			return false
		}
		st.persisted = rd.Snapshot.Metadata.Index
		failpoint.At(failpoint.RaftAfterApplySnap)
		// The received snapshot is durable: the WAL segments it covers are no longer needed
		// (upstream releases them here too; its raftAfterWALRelease marks this moment).
		if err := s.wal.ReleaseTo(rd.Snapshot.Metadata.Index); err != nil {
			s.fatal("failed to release the WAL segments the incoming snapshot covers", err)
			return false
		}
		failpoint.At(failpoint.RaftAfterWALRelease)
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
		failpoint.At(failpoint.RaftBeforeFollowerSend)
		s.peerStats.sending(msgs, time.Now())
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

// sendsAppends reports whether msgs replicate entries to anyone.
func sendsAppends(msgs []raftpb.Message) bool {
	for i := range msgs {
		if msgs[i].Type == raftpb.MsgApp {
			return true
		}
	}
	return false
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
		s.peerStats.leaderChanged(ss.Lead, time.Now())
		s.leaders.Notify()
		if ss.Lead != raft.None {
			s.m.leaderChanges.Inc()
		}
		s.log.Info("leader changed", "member-id", fmt.Sprintf("%x", s.id), "leader", fmt.Sprintf("%x", ss.Lead), "state", ss.RaftState.String())
		s.batcher.reset()
		if ss.Lead == s.id {
			s.les.Promote(s.cfg.electionTimeout())
		} else {
			s.les.Demote()
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

// raftLogger adapts slog to raft's logger interface.
type raftLogger struct{ l *slog.Logger }
