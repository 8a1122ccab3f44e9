// Package wal is the member's write-ahead log, in upstream etcd's format (see record.go): raft
// entries, hard states and snapshot markers, fsynced before a write is acknowledged.
//
// Segment files are named %016x-%016x.wal (sequence, first raft index they may hold) and are
// preallocated to SegmentSizeBytes. Every segment starts with a crc record, the metadata and
// (after the first) the latest hard state, so old segments can be deleted once a snapshot covers
// them. On open, an interrupted write at the end of the last segment is cut off (a copy of the
// segment is kept as <name>.broken); damage anywhere else is reported as corruption and nothing
// is changed.
//
// The files:
//
//	wal.go     WAL: create, open, read back, save entries and hard states, sync, release
//	           segments a snapshot covers
//	record.go  the frame and record format, the crc chain
//	segment.go listing a directory's segments, checking their sequence, decoding one
//	covers.go  CheckCovers: whether the WAL holds everything a database applied
package wal
