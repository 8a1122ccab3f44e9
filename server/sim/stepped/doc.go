// Package stepped runs a cluster of member cores stepped by one goroutine from one seed, so a
// seed replays byte for byte. Each member is raft (go.etcd.io/raft's RawNode, with pre-vote and
// check-quorum as etcd runs it), its log and hard state as kept on disk, and the applier
// (server/apply) writing the MVCC store (server/mvcc over server/backend). Each keeps a
// snapshot every few entries and drops the log before it; a member that fell behind gets the
// sender's state then (its database and configuration), as etcd sends it. Nothing runs on its
// own: every step draws one thing from the seed (a message delivered or lost, a member's tick, a
// client's request, a crash, a restart, a member cut off, the links mended, a leadership
// transfer, a step of replacing a member: a voter removed, a learner added, a learner promoted),
// and raft's election timeouts come from crypto/rand, which the tests seed
// (testing/cryptotest). pkg/judge's checks judge the end: acknowledged writes on every member,
// each ledger key written once, a client's revisions never going back, equal hashes.
//
// It is the exact-replay complement of server/sim, whose members are the whole etcdserver with
// its goroutines: there a seed fixes the faults and the requests but not Go's interleaving.
// Here the seed fixes everything, at the price of leaving out what the member runs on its own
// (the batcher, the version loop, leases, the WAL and snapshot files, the transport).
//
// The files:
//
//	member.go  a member's core: its disk, raft, its store; start, crash, applying an entry,
//	           snapshots kept, sent and installed
//	run.go     Run: the cluster, the seed's schedule, the clients, the settling and the checks
package stepped
