// Package apply holds the semantics of the key-value and lease requests, apart from the member
// that serves them: what a Range, a Put, a DeleteRange, a Txn and a lease's grant, revoke and
// checkpoint read, change and answer, given a read view or a write transaction of the MVCC
// store and the lessor, and who may make them (the auth store's answers). Every member
// applies the same committed request to the same state, so these are pure rules over their
// inputs: no raft, no clock, no network. The server (package etcdserver) decides when a request
// applies and for which caller; this package decides what applying it means and whether that
// caller may.
//
// The files:
//
//	kv.go     the inputs (Reader, Writer, Leases) and the errors a request is refused with
//	request.go
//	          Apply: the one dispatch of a committed key, compaction or lease request to its
//	          function, in the caller's batch (the server's apply loop and the stepped
//	          simulation both apply through it)
//	range.go  Range: revisions, limits, counts, filters by revision, sort orders, keys only
//	write.go  Put (ignore_value, ignore_lease, prev_kv, the lease must exist) and DeleteRange
//	txn.go    Txn: every branch decided against the state before it, every op on them checked,
//	          then applied (all or nothing); the read-only and serializable tests
//	lease.go  LeaseGrant, LeaseRevoke (its keys deleted at one revision), LeaseCheckpoint, and
//	          the checkpoint request a leader's round proposes
//	permissions.go
//	          Permitted: the caller's rights to a request, checked at apply on every member
//	          (every compare and op of a txn, either branch, nested); LeasePermitted
package apply
