// Package backend runs a bbolt file: one long-lived batch write transaction committed on a timer
// or after enough writes, and read transactions that always see committed data. It knows nothing
// of what the file holds (that is package schema). Callers that need to read their own uncommitted writes keep
// them in memory until the commit hook tells them the data is on disk.
//
// The files:
//
//	backend.go   Backend: the batch, commits, the shared read transaction (and pinned ones,
//	             read after a caller's lock is let go), snapshots, replacing the file
//	defrag.go    the online defragmentation, which keeps writes going while it copies
//	guard.go     Guard and ErrCorrupt: a damaged file is an error, never a crash
//	verify.go    VerifyFile: the page tree walked before bbolt reads a file offline
//	metrics.go   upstream's backend metric families
//	mmap_linux.go, mmap_other.go  how the file is mapped (read ahead on Linux)
package backend
