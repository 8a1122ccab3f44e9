package schema

import (
	"fmt"
	"path/filepath"
)

// The data directory, as upstream lays it out:
//
//	<data-dir>/member/wal/*.wal         the write-ahead log
//	<data-dir>/member/snap/*.snap       raft snapshots
//	<data-dir>/member/snap/db           the bbolt file
//	<data-dir>/member/snap/<index>.snap.db  a database received from the leader, until it applies

// MemberDir holds everything of the member.
func MemberDir(dataDir string) string { return filepath.Join(dataDir, "member") }

// WALDir holds the WAL segments.
func WALDir(dataDir string) string { return filepath.Join(MemberDir(dataDir), "wal") }

// SnapDir holds raft snapshots and the bbolt file.
func SnapDir(dataDir string) string { return filepath.Join(MemberDir(dataDir), "snap") }

// BackendPath is the bbolt file.
func BackendPath(dataDir string) string { return filepath.Join(SnapDir(dataDir), "db") }

// SnapDBPath is where a database received with the snapshot at index waits until it applies.
func SnapDBPath(dataDir string, index uint64) string {
	return filepath.Join(SnapDir(dataDir), fmt.Sprintf("%016x.snap.db", index))
}
