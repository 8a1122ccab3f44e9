package etcdserver

import (
	"fmt"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/features"
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
	snapshotSave       prometheus.Histogram
	leaseGranted       prometheus.Counter
	leaseRevoked       prometheus.Counter
	leaseRenewed       prometheus.Counter
	leaseExpired       prometheus.Counter
	leaseTTL           prometheus.Histogram

	walWrite                     prometheus.Histogram
	walWriteBytes                prometheus.Gauge
	snapFsync, snapMarshal       prometheus.Histogram
	snapDBFsync, snapDBSave      prometheus.Histogram
	applyDuration, rangeDuration *children[outcome, prometheus.Observer]
	requestDuration              *children[outcome, prometheus.Observer] // level 3.7 on, else nil
	clientRequests               *children[[2]string, prometheus.Counter]
	healthSuccess, healthFailure prometheus.Counter
	healthCheck                  *prometheus.GaugeVec
	healthChecks                 *prometheus.CounterVec
	heartbeatSendFailures        prometheus.Counter
	learnerPromotions            prometheus.Counter
	readIndexFailed, slowReads   prometheus.Counter
	snapshotApplying             prometheus.Gauge
	// v2StoreReads and v2StoreWrites are etcd_debugging_store_{reads,writes}_total below 3.7,
	// where upstream still keeps the membership in its v2 store: ours counts the same membership
	// reads and writes by the v2 store's action names. Nil from 3.7.
	v2StoreReads, v2StoreWrites *prometheus.CounterVec
	fds                         fdGauges
}

// v2StoreRead counts a read of the membership by the v2 store's action name (getRecursive).
func (m *metrics) v2StoreRead(action string) {
	if m.v2StoreReads != nil {
		m.v2StoreReads.WithLabelValues(action).Inc()
	}
}

// v2StoreWrite counts a write of the membership or the cluster version by the v2 store's
// action name: create (a member added, or the record of a removed one), update (peer URLs,
// promotion), set (published attributes, the cluster version), delete (a member removed).
func (m *metrics) v2StoreWrite(actions ...string) {
	if m.v2StoreWrites == nil {
		return
	}
	for _, a := range actions {
		m.v2StoreWrites.WithLabelValues(a).Inc()
	}
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
		snapshotSave:       prometheus.NewHistogram(prometheus.HistogramOpts{Name: "etcd_debugging_snap_save_total_duration_seconds", Help: "The total latency distributions of save called by snapshot.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		leaseGranted:       prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_debugging_lease_granted_total", Help: "The total number of granted leases."}),
		leaseRevoked:       prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_debugging_lease_revoked_total", Help: "The total number of revoked leases."}),
		leaseRenewed:       prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_debugging_lease_renewed_total", Help: "The number of renewed leases seen by the leader."}),
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	hist := func(name, help string, b []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b})
	}
	ms := prometheus.ExponentialBuckets(0.001, 2, 14)
	m.leaseExpired = counter("etcd_debugging_server_lease_expired_total", "The total number of expired leases.")
	m.leaseTTL = hist("etcd_debugging_lease_ttl_total", "Bucketed histogram of lease TTLs.", prometheus.ExponentialBuckets(1, 2, 24))
	m.walWrite = hist("etcd_disk_wal_write_duration_seconds", "The latency distributions of write called by WAL.", ms)
	m.walWriteBytes = prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_disk_wal_write_bytes_total", Help: "Total number of bytes written in WAL."})
	m.snapFsync = hist("etcd_snap_fsync_duration_seconds", "The latency distributions of fsync called by snap.", ms)
	m.snapMarshal = hist("etcd_debugging_snap_save_marshalling_duration_seconds", "The marshalling cost distributions of save called by snapshot.", ms)
	m.snapDBFsync = hist("etcd_snap_db_fsync_duration_seconds", "The latency distributions of fsyncing .snap.db file", ms)
	m.snapDBSave = hist("etcd_snap_db_save_total_duration_seconds", "The total latency distributions of v3 snapshot save", prometheus.ExponentialBuckets(0.1, 2, 10))
	applyDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_server_apply_duration_seconds", Help: "The latency distributions of v2 apply called by backend.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 20)}, []string{"version", "op", "success"})
	rangeDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_server_range_duration_seconds", Help: "The latency distributions of txn.Range",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 20)}, []string{"success"})
	clientRequests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_server_client_requests_total", Help: "The total number of client requests per client version."}, []string{"type", "client_api_version"})
	m.applyDuration = observers(applyDuration, func(op, success string) []string { return []string{"v3", op, success} })
	m.rangeDuration = observers(rangeDuration, func(_, success string) []string { return []string{success} })
	m.clientRequests = newChildren(func(l [2]string) prometheus.Counter { return clientRequests.WithLabelValues(l[0], l[1]) })
	m.healthSuccess = counter("etcd_server_health_success", "The total number of successful health checks")
	m.healthFailure = counter("etcd_server_health_failures", "The total number of failed health checks")
	m.healthCheck = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_server_healthcheck", Help: "The result of each kind of healthcheck."}, []string{"type", "name"})
	m.healthChecks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_server_healthchecks_total", Help: "The total number of each kind of healthcheck."}, []string{"type", "name", "status"})
	m.heartbeatSendFailures = counter("etcd_server_heartbeat_send_failures_total", "The total number of leader heartbeat send failures (likely overloaded from slow disk).")
	m.learnerPromotions = counter("etcd_server_learner_promote_successes", "The total number of successful learner promotions while this member is leader.")
	m.readIndexFailed = counter("etcd_server_read_indexes_failed_total", "The total number of failed read indexes seen.")
	m.slowReads = counter("etcd_server_slow_read_indexes_total", "The total number of pending read indexes not in sync with leader's or timed out read index requests.")
	m.snapshotApplying = prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_server_snapshot_apply_in_progress_total", Help: "1 if the server is applying the incoming snapshot. 0 if none."})
	goVersion := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_server_go_version", Help: "Which Go version server is running with. 1 for 'server_go_version' label with current version."}, []string{"server_go_version"})
	goVersion.WithLabelValues(runtime.Version()).Set(1)
	reg.MustRegister(m.leaseExpired, m.leaseTTL, m.walWrite, m.walWriteBytes, m.snapFsync, m.snapMarshal, m.snapDBFsync, m.snapDBSave,
		applyDuration, rangeDuration, clientRequests, m.healthSuccess, m.healthFailure, m.healthCheck, m.healthChecks, m.heartbeatSendFailures,
		m.learnerPromotions, m.readIndexFailed, m.slowReads, m.snapshotApplying, goVersion,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_server_is_learner", Help: "Whether or not this member is a learner. 1 if is, 0 otherwise."},
			func() float64 {
				if me := s.mem.Get(s.id); me != nil && me.IsLearner {
					return 1
				}
				return 0
			}),
		// No authentication yet (issue 16): the auth store's revision is upstream's initial one.
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_debugging_auth_revision", Help: "The current revision of auth store."}, func() float64 { return float64(s.auth.Revision()) }),
		knownPeers{s}, featureGauges{s.cfg.Features})
	reg.MustRegister(s.be.Collectors()...)
	reg.MustRegister(s.tr.Collectors()...)
	reg.MustRegister(s.kv.Collectors()...)
	reg.MustRegister(m.hasLeader, m.isLeader, m.leaderChanges, m.proposalsCommitted, m.proposalsApplied,
		m.proposalsPending, m.proposalsFailed, m.slowApply, m.serverID, m.serverVersion, m.clusterVersion,
		m.quotaBytes, m.walFsync, m.snapshotSave, m.leaseGranted, m.leaseRevoked, m.leaseRenewed,
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
	reg.MustRegister(idleFamilies()...)
	m.fds = newFDGauges(reg)
	if !version.NoV2StoreMetrics.Built(s.cfg.Level) {
		m.v2StoreReads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_debugging_store_reads_total",
			Help: "Total number of reads action by (get/getRecursive), local to this member."}, []string{"action"})
		m.v2StoreWrites = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_debugging_store_writes_total",
			Help: "Total number of writes (e.g. set/compareAndDelete) seen by this member."}, []string{"action"})
		reg.MustRegister(m.v2StoreReads, m.v2StoreWrites)
		m.v2StoreRead("getRecursive") // the membership read at start, as the v2 store's recovery
	}
	if version.Metrics37.Built(s.cfg.Level) {
		requestDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_server_request_duration_seconds", Help: "Response latency distribution in seconds for each type.",
			Buckets: ms}, []string{"type", "success"})
		reg.MustRegister(requestDuration)
		m.requestDuration = observers(requestDuration, func(kind, success string) []string { return []string{kind, success} })
	}
	m.serverVersion.WithLabelValues(s.cfg.release()).Set(1)
	return m
}

// knownPeers is etcd_network_known_peers{Local,Remote}: 1 for every member this one knows, itself
// included, as upstream.
type knownPeers struct{ s *Server }

var knownPeersDesc = prometheus.NewDesc("etcd_network_known_peers", "The current number of known peers.", []string{"Local", "Remote"}, nil)

func (k knownPeers) Describe(ch chan<- *prometheus.Desc) { ch <- knownPeersDesc }

func (k knownPeers) Collect(ch chan<- prometheus.Metric) {
	local := fmt.Sprintf("%x", k.s.id)
	for _, m := range k.s.mem.List() {
		ch <- prometheus.MustNewConstMetric(knownPeersDesc, prometheus.GaugeValue, 1, local, fmt.Sprintf("%x", m.ID))
	}
}

// featureGauges is etcd_server_feature_enabled{name,stage}.
type featureGauges struct{ g *features.Gates }

var featureDesc = prometheus.NewDesc("etcd_server_feature_enabled", "Whether or not a feature is enabled. 1 is enabled, 0 is not.", []string{"name", "stage"}, nil)

func (f featureGauges) Describe(ch chan<- *prometheus.Desc) { ch <- featureDesc }

func (f featureGauges) Collect(ch chan<- prometheus.Metric) {
	for _, st := range f.g.All() {
		v := 0.0
		if st.On {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(featureDesc, prometheus.GaugeValue, v, st.Name, st.Stage)
	}
}

// requestOp names a raft request for etcd_server_apply_duration_seconds's op label, as
// upstream's applier does: its type, but "unknown" for AuthStatus and anything unnamed.
func requestOp(r *pb.InternalRaftRequest) string {
	if t := requestType(r); t != "Unknown" && r.AuthStatus == nil {
		return t
	}
	return "unknown"
}

// setClusterVersion moves etcd_cluster_version's 1 to the new label ("3.6", as upstream).
func (m *metrics) setClusterVersion(l version.Level) {
	m.clusterVersion.Reset()
	if !l.IsZero() {
		m.clusterVersion.WithLabelValues(l.String()).Set(1)
	}
}

// heartbeatDetector is upstream's check that a leader's heartbeats leave on time: two heartbeat
// intervals without one to a peer mean the loop is overloaded (slow disk, most likely).
type heartbeatDetector struct {
	last map[uint64]time.Time
}

// reset forgets every peer's last heartbeat: after a change of role or leader the gap since a
// heartbeat sent in an earlier term says nothing about this loop (a leader cut off for 10 s and
// leading again would otherwise report a 10 s delay).
func (d *heartbeatDetector) reset() { d.last = nil }

func (d *heartbeatDetector) observe(msgs []raftpb.Message, s *Server) {
	now := time.Now()
	for _, m := range msgs {
		if m.Type != raftpb.MsgHeartbeat {
			continue
		}
		if d.last == nil {
			d.last = map[uint64]time.Time{}
		}
		if prev, ok := d.last[m.To]; ok {
			if late := now.Sub(prev) - 2*s.cfg.heartbeat(); late > 0 {
				s.log.Warn("leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk",
					"to", fmt.Sprintf("%x", m.To), "heartbeat-interval", s.cfg.heartbeat(), "expected-duration", 2*s.cfg.heartbeat(), "exceeded-duration", late)
				s.m.heartbeatSendFailures.Inc()
			}
		}
		d.last[m.To] = now
	}
}

// walMetrics reports the WAL's writes and fsyncs (only real ones, so --unsafe-no-fsync leaves
// etcd_disk_wal_fsync_duration_seconds empty, as upstream).
type walMetrics struct{ m *metrics }

func (w walMetrics) Wrote(n int, took time.Duration) {
	w.m.walWriteBytes.Add(float64(n))
	w.m.walWrite.Observe(took.Seconds())
}

func (w walMetrics) Synced(took time.Duration) { w.m.walFsync.Observe(took.Seconds()) }

// idleFamilies are families upstream's member binary registers for parts a member does not
// run here: its v2 store (gone as an API; a member serves none of it) and its gRPC proxy's
// cache and coalescing (upstream links the proxy into every member; its counters stay 0 there).
// Dashboards and alerts that name them find them, at upstream's values.
func idleFamilies() []prometheus.Collector {
	counter := func(name, help string) prometheus.Collector {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Collector {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	return []prometheus.Collector{
		counter("etcd_debugging_store_expires_total", "Total number of expired keys."),
		counter("etcd_debugging_store_watch_requests_total", "Total number of incoming watch requests (new or reestablished)."),
		gauge("etcd_debugging_store_watchers", "Count of currently active watchers."),
		gauge("etcd_grpc_proxy_cache_hits_total", "Total number of cache hits"),
		gauge("etcd_grpc_proxy_cache_keys_total", "Total number of keys/ranges cached"),
		gauge("etcd_grpc_proxy_cache_misses_total", "Total number of cache misses"),
		counter("etcd_grpc_proxy_events_coalescing_total", "Total number of events coalescing"),
		gauge("etcd_grpc_proxy_watchers_coalescing_total", "Total number of current watchers coalescing"),
	}
}
