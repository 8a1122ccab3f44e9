package version

// Feature is a behaviour that exists from some level on. It is on in a cluster only when the
// cluster version has reached that level, even on members whose binary has it.
type Feature int

const (
	// StorageVersion: the backend records its schema level in meta/storageVersion and members
	// migrate their storage with the cluster version.
	StorageVersion Feature = iota
	// Downgrade: Maintenance.Downgrade can validate and enable a downgrade to the level below.
	Downgrade
	// LeaseCheckpointPersist: lease checkpoints also write the remaining TTL to the lease bucket,
	// so it survives restarts of every member, not only leader changes.
	LeaseCheckpointPersist
	// FlagNames36: upstream 3.6's flag set: the new names of 3.5's --experimental-* flags (those
	// deprecated), feature gates, the v3 discovery client; and no v2 API or v2 proxy flags.
	FlagNames36
	// RangeStream: the KV.RangeStream RPC serves a range in chunks. Upstream serves it by binary
	// alone (a 3.7 member in a 3.6 cluster answers it), so it is checked with Built, not On.
	RangeStream
	// NoExperimentalFlags: upstream 3.7 removed the --experimental-* spellings of its flags and
	// the --experimental-* booleans that stood for feature gates (3.6 warned they would go).
	NoExperimentalFlags
	// Metrics37: the metric families upstream 3.7 added, etcd_server_request_duration_seconds and
	// the watch send loop's etcd_debugging_server_watch_send_loop_* histograms.
	Metrics37
	// OpenAuthStatus: upstream 3.7 answers AuthStatus to any caller (3.6 only to root).
	OpenAuthStatus
	// NoV2DiscoveryFlags: upstream 3.7 removed v2 discovery: --discovery and --discovery-proxy are
	// no longer defined (its --help still lists them).
	NoV2DiscoveryFlags
	// NoDebuggingRangeTotal: upstream 3.6 dropped etcd_debugging_mvcc_range_total, which 3.5
	// counted beside etcd_mvcc_range_total.
	NoDebuggingRangeTotal
	// NoV2StoreMetrics: upstream 3.7 dropped the v2 store's etcd_debugging_store_reads_total and
	// etcd_debugging_store_writes_total, which count the membership kept in it until then.
	NoV2StoreMetrics
	// StatusQuota: Maintenance.Status reports the backend quota (dbSizeQuota), a field upstream
	// 3.6 added; a 3.5 member reports it only as the etcd_server_quota_backend_bytes metric.
	StatusQuota
	// MembershipFromV3: the v3 store is the membership's truth. A 3.5 member takes the v2
	// store's: it removes from the v3 store a member the v2 store removed (upstream 3.5.26+,
	// etcd-io/etcd#20967).
	MembershipFromV3
	// V3Publish: a member proposes its published attributes and the cluster version as v3
	// requests. A 3.5 member proposes them as bare v2 requests, as upstream 3.5 does: 3.4
	// members apply nothing else (they panic on the v3 ones).
	V3Publish
	// NoV2API: upstream 3.6 removed the v2 API. A 3.5 member keeps the v2 store (the membership
	// under /0, the v2 API's keys under /1), applies every member's v2 requests to it, carries it
	// in raft snapshots, and serves the v2 API with --enable-v2.
	NoV2API
)

var features = map[Feature]struct {
	name  string
	level Level
}{
	StorageVersion:         {"storage-version", V3_6},
	Downgrade:              {"downgrade", V3_6},
	LeaseCheckpointPersist: {"lease-checkpoint-persist", V3_6},
	FlagNames36:            {"flag-names-3.6", V3_6},
	RangeStream:            {"range-stream", V3_7},
	NoExperimentalFlags:    {"no-experimental-flags", V3_7},
	Metrics37:              {"metrics-3.7", V3_7},
	OpenAuthStatus:         {"open-auth-status", V3_7},
	NoV2DiscoveryFlags:     {"no-v2-discovery-flags", V3_7},
	NoDebuggingRangeTotal:  {"no-debugging-range-total", V3_6},
	NoV2StoreMetrics:       {"no-v2-store-metrics", V3_7},
	StatusQuota:            {"status-quota", V3_6},
	MembershipFromV3:       {"membership-from-v3", V3_6},
	V3Publish:              {"v3-publish", V3_6},
	NoV2API:                {"no-v2-api", V3_6},
}

func (f Feature) String() string { return features[f].name }

// Level is the level that introduced f.
func (f Feature) Level() Level { return features[f].level }

// Built reports whether a binary at level bin implements f.
func (f Feature) Built(bin Level) bool { return !bin.Less(f.Level()) }

// On reports whether f is on for a binary at level bin in a cluster at cluster version cluster.
// Nothing newer than the oldest level is on before the cluster version is decided.
func (f Feature) On(bin, cluster Level) bool {
	return f.Built(bin) && !cluster.IsZero() && !cluster.Less(f.Level())
}
