// Package sim runs a whole cluster of our members inside one process: each member is the real
// etcdserver (raft, WAL, applier, MVCC, lessor, version loop, storage in its own directory), and
// they talk over an in-memory network (Network) whose faults, partitions and member restarts
// are drawn from one seed (Run). pkg/judge's checks judge the recorded history:
// linearizability (porcupine), acknowledged writes, revisions, watches, equal hashes, cluster
// and storage versions, leases.
//
// A run goes on the wall clock, or in virtual time inside a testing/synctest bubble
// (SIM_VIRTUAL=1; the lifecycle scripts always): every timer of the members and the harness then
// moves only while every goroutine waits. What a seed replays: the fault schedule, the client
// operations and every fault draw are exactly the seed's. Go's scheduler is not: the order in
// which goroutines interleave, and so which messages a fault hits, can differ between two runs
// of the same seed (docs/architecture.md). Package stepped (sim/stepped) is the complement that
// replays byte for byte: member cores stepped by one goroutine.
//
// The files:
//
//	run.go        Run: the schedule of faults drawn from a seed, the clients, the watches and
//	              the version sampler, and the checks at the end
//	cluster.go    Cluster: members started, stopped, crashed, restarted and swapped to another
//	              level on their data; each member's lease clock
//	membership.go a member replaced by a learner (remove, add, join, promote)
//	lifecycle.go  a run's version lifecycle: a rolling upgrade, and a downgrade back
//	network.go    the in-memory network: raft messages through per-link queues with faults,
//	              peer HTTP served in process
//	disk.go       the WAL's disk, which a power cut empties of what was not synced, and
//	              which can stall its syncs (a disk that stops answering)
//	history.go    the clients' history and the simulation's own checks of it
//	leases.go     the lease client and the lease log the lease check reads
package sim
