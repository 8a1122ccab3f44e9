package etcdserver

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"etcdx/pkg/buildinfo"
	"etcdx/server/version"
)

// metrics uses upstream etcd's metric names so existing dashboards work. One set per member,
// registered in the member's own registry.
type metrics struct {
	hasLeader          prometheus.Gauge
	isLeader           prometheus.Gauge
	leaderChanges      prometheus.Counter
	proposalsCommitted prometheus.Gauge
	proposalsApplied   prometheus.Gauge
	proposalsPending   prometheus.Gauge
	proposalsFailed    prometheus.Counter
	slowApply          prometheus.Counter
	serverID           *prometheus.GaugeVec
	serverVersion      *prometheus.GaugeVec
	clusterVersion     *prometheus.GaugeVec
	quotaBytes         prometheus.Gauge
	walFsync           prometheus.Histogram
	backendCommit      prometheus.Histogram
	snapshotSave       prometheus.Histogram
	leaseGranted       prometheus.Counter
	leaseRevoked       prometheus.Counter
	leaseRenewed       prometheus.Counter
}

func newMetrics(reg *prometheus.Registry, s *Server) *metrics {
	m := &metrics{
		hasLeader:          prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_server_has_leader", Help: "Whether or not a leader exists. 1 is existence, 0 is not."}),
		isLeader:           prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_server_is_leader", Help: "Whether or not this member is a leader. 1 if is, 0 otherwise."}),
		leaderChanges:      prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_server_leader_changes_seen_total", Help: "The number of leader changes seen."}),
		proposalsCommitted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_server_proposals_committed_total", Help: "The total number of consensus proposals committed."}),
		proposalsApplied:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_server_proposals_applied_total", Help: "The total number of consensus proposals applied."}),
		proposalsPending:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_server_proposals_pending", Help: "The current number of pending proposals to commit."}),
		proposalsFailed:    prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_server_proposals_failed_total", Help: "The total number of failed proposals seen."}),
		slowApply:          prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_server_slow_apply_total", Help: "The total number of slow apply requests (likely overloaded from slow disk)."}),
		serverID:           prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_server_id", Help: "Server or member ID in hexadecimal format. 1 for 'server_id' label with current ID."}, []string{"server_id"}),
		serverVersion:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_server_version", Help: "Which version is running. 1 for 'server_version' label with current version."}, []string{"server_version"}),
		clusterVersion:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_cluster_version", Help: "Which version is running. 1 for 'cluster_version' label with current cluster version"}, []string{"cluster_version"}),
		quotaBytes:         prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_server_quota_backend_bytes", Help: "Current backend storage quota size in bytes."}),
		walFsync:           prometheus.NewHistogram(prometheus.HistogramOpts{Name: "etcd_disk_wal_fsync_duration_seconds", Help: "The latency distributions of fsync called by WAL.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		backendCommit:      prometheus.NewHistogram(prometheus.HistogramOpts{Name: "etcd_disk_backend_commit_duration_seconds", Help: "The latency distributions of commit called by backend.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		snapshotSave:       prometheus.NewHistogram(prometheus.HistogramOpts{Name: "etcd_debugging_snap_save_total_duration_seconds", Help: "The total latency distributions of save called by snapshot.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		leaseGranted:       prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_debugging_lease_granted_total", Help: "The total number of granted leases."}),
		leaseRevoked:       prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_debugging_lease_revoked_total", Help: "The total number of revoked leases."}),
		leaseRenewed:       prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_debugging_lease_renewed_total", Help: "The number of renewed leases seen by the leader."}),
	}
	reg.MustRegister(m.hasLeader, m.isLeader, m.leaderChanges, m.proposalsCommitted, m.proposalsApplied,
		m.proposalsPending, m.proposalsFailed, m.slowApply, m.serverID, m.serverVersion, m.clusterVersion,
		m.quotaBytes, m.walFsync, m.backendCommit, m.snapshotSave, m.leaseGranted, m.leaseRevoked, m.leaseRenewed,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_mvcc_db_total_size_in_bytes", Help: "Total size of the underlying database physically allocated in bytes."},
			func() float64 { return float64(s.be.Size()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_mvcc_db_total_size_in_use_in_bytes", Help: "Total size of the underlying database logically in use in bytes."},
			func() float64 { return float64(s.be.SizeInUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_debugging_mvcc_keys_total", Help: "Total number of keys."},
			func() float64 { return float64(s.kv.KeyCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_debugging_mvcc_current_revision", Help: "The current revision of store."},
			func() float64 { return float64(s.kv.Rev()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_debugging_mvcc_compact_revision", Help: "The revision of the last compaction in store."},
			func() float64 { return float64(s.kv.CompactRev()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.serverVersion.WithLabelValues(buildinfo.Version).Set(1)
	return m
}

// setClusterVersion moves etcd_cluster_version's 1 to the new label ("3.6", as upstream).
func (m *metrics) setClusterVersion(l version.Level) {
	m.clusterVersion.Reset()
	if !l.IsZero() {
		m.clusterVersion.WithLabelValues(l.String()).Set(1)
	}
}
