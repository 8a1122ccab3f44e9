// Package etcdserver is one etcd member: it proposes client writes through raft, persists the
// log in the WAL, applies committed entries to the MVCC store and lessor, and serves reads. It
// holds the loops and entry points; the rules they follow live in their own packages (version,
// membership, schema, apply) and the storage in theirs (wal, snap, backend, mvcc, lease).
//
// The files:
//
//	server.go        Server: its state, Start (which loops run), Stop, draining, accessors
//	bootstrap.go     New: opening the storage, then bootstrapping a new cluster, joining an
//	                 existing one or restarting from the WAL and snapshots
//	raft.go          the raft loop: ticks, persisting each Ready, sending, handing committed
//	                 entries to the applier; raft's logger
//	reads.go         linearizable reads: ReadIndex rounds shared by the reads waiting on them,
//	                 paced under load as the batches are
//	forwardedreads.go a follower's ReadIndex answered by the leader at once, without a
//	                 heartbeat round, where the two meet every quorum (two or three voters)
//	leases.go        the leader's lease loop: revoking expired leases, checkpointing TTLs
//	snapshot_take.go raft snapshots of the log: when they are due, in memory every 1,000 entries
//	                 (or 4 MiB of them) with the log trimmed behind them, to disk by a
//	                 goroutine of their own
//	config.go        Config: what a member starts with, its defaults and timeouts
//	proposals.go     proposing through raft (propose): waiting for a leader, retrying a
//	                 proposal raft dropped while leadership moved, proposals forwarded by
//	                 followers
//	batcher.go       a leader's proposals gathered while the raft loop is busy and stepped
//	                 into raft as one per Ready (one append per follower, not one per entry),
//	                 one batch in flight, rounds paced under load, longer after a full one
//	                 (paceWait, batchPace)
//	handover.go      the gate that orders proposals stepped without raft's answer against
//	                 leadership transfers
//	v3.go            the KV and lease requests of the v3 API (Range, Put, Txn, Compact, Lease*)
//	rangeencoded.go  Range for the gRPC API, answered in its wire encoding (rangewire)
//	rangestream.go   RangeStream (3.7): a range in chunks, each from a read view of its own
//	apply.go         the apply loop; applying committed entries: requests, conf changes, the
//	                 consistent index (what a key-value request means is package apply's)
//	cluster.go       member add/remove/update/promote, strict reconfiguration checks,
//	                 publishing this member's attributes
//	versions.go      the version lifecycle at run time: publishing versions, the leader's
//	                 cluster-version decisions, storage migration, Maintenance.Downgrade
//	peerhttp.go      the peer listener: raft messages, lease forwarding, /members,
//	                 /members/promote, /members/hashkv, /downgrade/enabled, the peer version check
//	snapshot_ship.go database snapshots sent to and received from other members
//	leadership.go    MoveLeader and handing leadership over before stopping
//	auth.go          the Auth service; who the caller is; permission checks before serving and
//	                 at apply (the rules are in package auth)
//	alarms.go        the alarm table (NOSPACE, CORRUPT)
//	corrupt.go       corruption checks: /members/hashkv, the initial check, the leader's
//	                 periodic check that raises CORRUPT
//	ticks.go         fast-forwarding the election timer at start
//	compactor.go     auto compaction (periodic, revision)
//	metrics.go       the member's Prometheus metrics (and backend's, mvcc's registered with
//	                 them), late-heartbeat detection
//	fdmonitor.go     upstream's file descriptor gauges and their 80% warning
//	wait.go, ids.go  waiting for applied entries; request and lease IDs
//	peers.go         PeerNetwork: how a member reaches the others (the real network, or the
//	                 simulation's in-memory one)
//	peerversions.go  asking members that publish no version (upstream's) on their peer URL
//	forcenew.go      --force-new-cluster: the log's tail dropped, every other member removed
//	backpressure.go  upstream's too-many-requests limit; a leader's wait before renewing a lease
//	startcheck.go    the start-up check that the WAL covers what the database applied
//	membersync.go    the v3 store's membership brought in line with the v2 store's at start
//	requestmetrics.go the 3.7 request-duration metric
//	metricchildren.go the per-request metrics' children, kept instead of looked up per request
//	v2apply.go       the v2 store a 3.5 member keeps: v2 requests applied in raft order, the
//	                 membership mirrored under /0, the leader's SYNC, the store in snapshots
//	v2do.go          the v2 API's requests (V2Do): local reads and watches, writes through raft
//	v2stats.go       the raft traffic /v2/stats/self and /v2/stats/leader report
//	v2deprecation.go the start refused on custom v2 content from the write-only stage on
package etcdserver
