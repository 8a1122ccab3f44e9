// Package stepped runs a cluster of member cores stepped by one goroutine from one seed, so a
// seed replays byte for byte. Each member is raft (go.etcd.io/raft's RawNode, with pre-vote and
// check-quorum as etcd runs it), its log and hard state as kept on disk, and the applier
// (server/apply) writing the MVCC store (server/mvcc over server/backend) and the lessor
// (server/lease). Each keeps a snapshot every few entries and drops the log before it; a member
// that fell behind gets the sender's state then (its database and configuration), as etcd sends
// it.
//
// Everything in a member that runs on time runs on the cluster's clock, which moves a tick
// interval when every member ticks: raft's ticks; the store's batch, committed on each of the
// member's ticks (a crash loses what it applied since, and the restart applies the log again
// from the consistent index the file holds, as etcd's does); a compaction's clean-up, a batch
// per tick (mvcc's stepped mode); and the leader's rounds: expired leases revoked
// (lease.ExpiryCheck), remaining TTLs checkpointed, the cluster version decided
// (version.Cluster.Decide, over the binary levels of the members it can reach) and the
// keyspace compacted where the server's auto-compaction rule says (compactor.Retention, the
// newest revision sampled a period before). Entries apply through the server's own dispatch
// (apply.Apply), so the harness holds no rule of the member's but a reduced cluster-version
// apply (the version stored; no downgrade). Checkpoints model upstream's LeaseCheckpoint gate
// on. The lessors judge expiry by the
// cluster's clock; keep-alives go to the leader, which confirms its leadership with a read index
// and renews once it has applied that far. Members start on 3.6 and are upgraded to 3.7 one at
// a time; a binary below the cluster version its data holds refuses to start, and one the
// cluster version passes stops.
//
// Nothing runs on its own: every step draws one thing from the seed (a message delivered or
// lost, a member's tick or every member's, a client's request, a crash, a restart, an upgrade,
// a member cut off, the links mended, a leadership transfer, a step of replacing a member: a
// voter removed, a learner added, a learner promoted), and raft's election timeouts come from
// crypto/rand, which the tests seed (testing/cryptotest). pkg/judge's checks judge the end:
// acknowledged writes on every member, each ledger key written once, a client's revisions
// never going back, equal hashes, leases (none expired before its TTL since the last
// acknowledged keep-alive, none twice, none kept alive after it expired, none holding a key
// long after the keep-alives stopped), cluster versions (never above a member's level, never
// lowered). Planted bugs (a write outside raft, a fast lessor clock, no revokes, the consistent
// index committed before its entry's changes) show which check fires for each.
//
// It is the exact-replay complement of server/sim, whose members are the whole etcdserver with
// its goroutines: there a seed fixes the faults and the requests but not Go's interleaving.
// Here the seed fixes everything, at the price of leaving out the member's plumbing (the
// proposal batcher, the WAL and snapshot files, the transport, the HTTP version polls).
//
// The files:
//
//	member.go  a member's core: its disk, raft, its store and lessor; start, crash, applying an
//	           entry, a compaction scheduled, snapshots kept, sent and installed
//	run.go     Run: the cluster, its clock, the seed's schedule, the clients, the leader's
//	           rounds, upgrades, the settling, the leases' expiry and the checks
package stepped
