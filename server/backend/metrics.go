package backend

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"
)

// metrics are the backend's upstream metric families (etcd_disk_backend_*, the commit phases,
// defragmentation); the member registers them with Collectors.
type metrics struct {
	commit, rebalance, spill, write prometheus.Histogram
	defrag, snapshot, hash          prometheus.Histogram
	defragInflight                  atomic.Int64
}

func newMetrics() *metrics {
	hist := func(name, help string, b []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b})
	}
	ms := prometheus.ExponentialBuckets(0.001, 2, 14)
	return &metrics{
		commit:    hist("etcd_disk_backend_commit_duration_seconds", "The latency distributions of commit called by backend.", ms),
		rebalance: hist("etcd_debugging_disk_backend_commit_rebalance_duration_seconds", "The latency distributions of commit.rebalance called by bboltdb backend.", ms),
		spill:     hist("etcd_debugging_disk_backend_commit_spill_duration_seconds", "The latency distributions of commit.spill called by bboltdb backend.", ms),
		write:     hist("etcd_debugging_disk_backend_commit_write_duration_seconds", "The latency distributions of commit.write called by bboltdb backend.", ms),
		defrag:    hist("etcd_disk_backend_defrag_duration_seconds", "The latency distribution of backend defragmentation.", prometheus.ExponentialBuckets(.1, 2, 13)),
		snapshot:  hist("etcd_disk_backend_snapshot_duration_seconds", "The latency distribution of backend snapshots.", prometheus.ExponentialBuckets(.01, 2, 17)),
		hash:      hist("etcd_mvcc_hash_duration_seconds", "The latency distribution of storage hash operation.", prometheus.ExponentialBuckets(.01, 2, 15)),
	}
}

// committed records one commit and bbolt's phases of it.
func (m *metrics) committed(took time.Duration, st bolt.TxStats) {
	m.commit.Observe(took.Seconds())
	m.rebalance.Observe(st.GetRebalanceTime().Seconds())
	m.spill.Observe(st.GetSpillTime().Seconds())
	m.write.Observe(st.GetWriteTime().Seconds())
}

// Collectors are the backend's metric families, for the member's registry.
func (b *Backend) Collectors() []prometheus.Collector {
	m := b.m
	return []prometheus.Collector{m.commit, m.rebalance, m.spill, m.write, m.defrag, m.snapshot, m.hash,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "etcd_disk_defrag_inflight", Help: "Whether or not defrag is active on the member. 1 means active, 0 means not."},
			func() float64 { return float64(m.defragInflight.Load()) }),
	}
}
