package failpoint

import "etcdx/pkg/buildinfo"

// Name is a failpoint's name, as upstream's gofail comments declare it.
type Name string

// Point is one failpoint: its name, the first and (when upstream dropped it) last level whose
// upstream has it, and the moment it marks in our member (docs/operations.md lists them).
type Point struct {
	Name         Name
	Since, Until string
	At           string
}

// The points, by the part of the member they are in. Where ours does the work differently
// from upstream, the point sits at the moment that plays the same part.
const (
	// raft loop (etcdserver/raft.go)
	RaftBeforeLeaderSend Name = "raftBeforeLeaderSend"
	RaftBeforeSaveSnap   Name = "raftBeforeSaveSnap"
	RaftAfterSaveSnap    Name = "raftAfterSaveSnap"
	RaftBeforeSave       Name = "raftBeforeSave"
	// 3.5 only: a Ready whose committed entries are not yet in the WAL
	RaftBeforeSaveWaitWalSync Name = "raftBeforeSaveWaitWalSync"
	RaftAfterSave             Name = "raftAfterSave"
	RaftBeforeApplySnap       Name = "raftBeforeApplySnap"
	RaftAfterApplySnap        Name = "raftAfterApplySnap"
	RaftAfterWALRelease       Name = "raftAfterWALRelease"
	RaftBeforeFollowerSend    Name = "raftBeforeFollowerSend"
	RaftBeforeAdvance         Name = "raftBeforeAdvance"
	// snapshots to disk (etcdserver/snapshot_take.go); upstream spells it so
	RaftBeforeWALSaveSnaphot Name = "raftBeforeWALSaveSnaphot"
	// applying (etcdserver/apply.go, snapshot_ship.go) and publishing (cluster.go)
	ApplyBeforeOpenSnapshot   Name = "applyBeforeOpenSnapshot"
	ApplyAfterOpenSnapshot    Name = "applyAfterOpenSnapshot"
	BeforeApplyOneEntryNormal Name = "beforeApplyOneEntryNormal"
	BeforeApplyOneConfChange  Name = "beforeApplyOneConfChange"
	BeforePublishing          Name = "beforePublishing"
	// requests (etcdserver/v3.go, rangestream.go, peerhttp.go; v3rpc/watch.go)
	BeforeRangeStreamChunk                 Name = "beforeRangeStreamChunk"
	BeforeLookupWhenLeaseTimeToLive        Name = "beforeLookupWhenLeaseTimeToLive"
	BeforeLookupWhenForwardLeaseTimeToLive Name = "beforeLookupWhenForwardLeaseTimeToLive"
	BeforeServeHTTPLeaseRenew              Name = "beforeServeHTTPLeaseRenew"
	BeforeCheckpointInLeaseRenew           Name = "beforeCheckpointInLeaseRenew"
	BeforeSendWatchResponse                Name = "beforeSendWatchResponse"
	AfterIsMemberExist                     Name = "afterIsMemberExist"
	// peers (transport)
	RaftDropHeartbeat Name = "raftDropHeartbeat"
	// files: received snapshot databases (etcdserver/snapshot_ship.go), WAL (wal)
	SnapDBRenameBeforeDirSync Name = "snapDBRenameBeforeDirSync"
	SnapDBDirSyncError        Name = "snapDBDirSyncError"
	WALBeforeSync             Name = "walBeforeSync"
	WALAfterSync              Name = "walAfterSync"
	// compaction (mvcc)
	CompactBeforeCommitScheduledCompact Name = "compactBeforeCommitScheduledCompact"
	CompactAfterCommitScheduledCompact  Name = "compactAfterCommitScheduledCompact"
	CompactAfterAcquiredBatchTxLock     Name = "compactAfterAcquiredBatchTxLock"
	CompactBeforeSetFinishedCompact     Name = "compactBeforeSetFinishedCompact"
	CompactAfterSetFinishedCompact      Name = "compactAfterSetFinishedCompact"
	CompactBeforeCommitBatch            Name = "compactBeforeCommitBatch"
	CompactAfterCommitBatch             Name = "compactAfterCommitBatch"
	// the database (backend)
	DefragOpenFileError       Name = "defragOpenFileError"
	DefragBeforeCopy          Name = "defragBeforeCopy"
	DefragBeforeRename        Name = "defragBeforeRename"
	DefragdbFail              Name = "defragdbFail"
	BeforeStartDBTxn          Name = "beforeStartDBTxn"
	AfterStartDBTxn           Name = "afterStartDBTxn"
	BeforeCommit              Name = "beforeCommit"
	AfterCommit               Name = "afterCommit"
	BeforeWritebackBuf        Name = "beforeWritebackBuf"
	AfterWritebackBuf         Name = "afterWritebackBuf"
	CommitBeforePreCommitHook Name = "commitBeforePreCommitHook"
	CommitAfterPreCommitHook  Name = "commitAfterPreCommitHook"
)

// All lists every point with where it is in our member.
var All = []Point{
	{RaftBeforeLeaderSend, "3.5", "", "a leader's Ready: before its messages go out, ahead of its own WAL write"},
	{RaftBeforeSaveSnap, "3.5", "", "a follower's Ready with the leader's snapshot: before the snapshot file and its WAL record are written"},
	{RaftAfterSaveSnap, "3.5", "", "after the leader's snapshot is on disk, before the Ready's entries are"},
	{RaftBeforeSave, "3.5", "", "before a Ready's hard state and entries are written to the WAL"},
	{RaftBeforeSaveWaitWalSync, "3.5", "3.5", "3.5's point for a Ready that commits entries it also brings, or brings a lone member's entries: before their WAL write, which the apply waits for"},
	{RaftAfterSave, "3.5", "", "after the WAL write (fsynced), before the entries reach raft's log in memory"},
	{RaftBeforeApplySnap, "3.5", "", "before the leader's snapshot is applied to raft's log in memory"},
	{RaftAfterApplySnap, "3.5", "", "after the leader's snapshot is applied to raft's log in memory"},
	{RaftAfterWALRelease, "3.5", "", "after the WAL segments the leader's snapshot covers are released"},
	{RaftBeforeFollowerSend, "3.5", "", "a follower's Ready: after the WAL write, before its answers go out"},
	{RaftBeforeAdvance, "3.5", "", "after a Ready is handled, before raft is told so (Advance)"},
	{RaftBeforeWALSaveSnaphot, "3.5", "", "a snapshot to disk: after the snapshot file, before its WAL record"},
	{ApplyBeforeOpenSnapshot, "3.5", "", "installing the leader's database: before it replaces ours"},
	{ApplyAfterOpenSnapshot, "3.5", "", "installing the leader's database: after it replaced ours, before the stores reload"},
	{BeforeApplyOneEntryNormal, "3.5", "", "before a committed request entry is applied"},
	{BeforeApplyOneConfChange, "3.5", "", "before a committed membership change is applied"},
	{BeforePublishing, "3.5", "", "before the member publishes its name and client URLs through raft"},
	{BeforeRangeStreamChunk, "3.7", "", "RangeStream: before each chunk is read"},
	{BeforeLookupWhenLeaseTimeToLive, "3.5", "", "LeaseTimeToLive on the leader: before the lease is looked up"},
	{BeforeLookupWhenForwardLeaseTimeToLive, "3.5", "", "a follower's forwarded LeaseTimeToLive, on the leader: before the lease is looked up"},
	{BeforeServeHTTPLeaseRenew, "3.7", "", "a follower's forwarded keep-alive, on the leader: before it is renewed"},
	{BeforeCheckpointInLeaseRenew, "3.5", "", "a keep-alive on the leader: after the lease is found, before it is renewed (a revoke meanwhile makes the renewal find it gone)"},
	{BeforeSendWatchResponse, "3.5", "", "before a watch response is sent to its client"},
	{AfterIsMemberExist, "3.5", "", "a client request: before the member checks whether it is a learner that may not serve it"},
	{RaftDropHeartbeat, "3.7", "", "a received peer message: return drops it (heartbeats and all)"},
	{SnapDBRenameBeforeDirSync, "3.5", "", "a received database snapshot: after its rename, before the directory is synced"},
	{SnapDBDirSyncError, "3.5", "", "a received database snapshot: return(\"text\") fails the directory sync with that error"},
	{WALBeforeSync, "3.5", "", "before the WAL's fdatasync"},
	{WALAfterSync, "3.5", "", "after the WAL's fdatasync"},
	{CompactBeforeCommitScheduledCompact, "3.5", "", "a compaction: before the scheduled-compaction mark is committed"},
	{CompactAfterCommitScheduledCompact, "3.5", "", "a compaction: after the scheduled-compaction mark is committed"},
	{CompactAfterAcquiredBatchTxLock, "3.7", "", "a compaction batch: after the batch is taken, before keys are deleted"},
	{CompactBeforeSetFinishedCompact, "3.5", "", "a compaction's last batch: before the finished mark is written"},
	{CompactAfterSetFinishedCompact, "3.5", "", "a compaction's last batch: after the finished mark is written"},
	{CompactBeforeCommitBatch, "3.5", "", "a compaction batch: before it is committed"},
	{CompactAfterCommitBatch, "3.5", "", "a compaction batch: after it is committed"},
	{DefragOpenFileError, "3.5", "", "defrag: return(\"text\") fails opening the temporary file with that error"},
	{DefragBeforeCopy, "3.5", "", "defrag: after the copy's file is created and writes are being recorded for it, before the copy (writes go on)"},
	{DefragBeforeRename, "3.5", "", "defrag: after the copy has caught up with the writes made meanwhile and is synced, before it is renamed over the file (writes wait here)"},
	{DefragdbFail, "3.5", "", "defrag: return(\"text\") fails the copy with that error"},
	{BeforeStartDBTxn, "3.5", "", "before the backend begins its next write transaction"},
	{AfterStartDBTxn, "3.5", "", "after the backend began its next write transaction"},
	{BeforeCommit, "3.5", "", "before the backend's batch is committed (bbolt commit and fsync)"},
	{AfterCommit, "3.5", "", "after the backend's batch is committed"},
	{BeforeWritebackBuf, "3.5", "", "a write transaction's end: before readers see its writes, holding the lock they take"},
	{AfterWritebackBuf, "3.5", "", "a write transaction's end: after readers see its writes, still holding their lock"},
	{CommitBeforePreCommitHook, "3.5", "", "a commit: before the batch is sealed (ours writes the consistent index with each entry)"},
	{CommitAfterPreCommitHook, "3.5", "", "a commit: after the batch is sealed, before bbolt's commit"},
}

// InLevel says whether upstream's release of level (major.minor) has the point.
func (p Point) InLevel(level string) bool {
	return buildinfo.LevelAtLeast(level, p.Since) && (p.Until == "" || buildinfo.LevelAtLeast(p.Until, level))
}
