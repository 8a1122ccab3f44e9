package mvcc

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"etcdx/server/version"
)

// metrics are the store's upstream metric families (etcd_mvcc_*, etcd_debugging_mvcc_*). A
// store always has them; the member registers them with Collectors.
type metrics struct {
	puts, deletes, ranges, txns prometheus.Counter
	// rangesDebug is 3.5's second range counter (etcd_debugging_mvcc_range_total); nil from 3.6.
	rangesDebug            prometheus.Counter
	putSize                prometheus.Gauge
	events                 prometheus.Counter
	compactionKeys         prometheus.Counter
	compactionLast         prometheus.Gauge
	compactionPauseMs      prometheus.Histogram
	compactionTotalMs      prometheus.Histogram
	indexCompactionPauseMs prometheus.Histogram
	hashRev                prometheus.Histogram

	openReads atomic.Int64
}

func newMetrics() *metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	hist := func(name, help string, b []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b})
	}
	var rangesDebug prometheus.Counter
	if !version.NoDebuggingRangeTotal.Built(version.Local()) {
		rangesDebug = counter("etcd_debugging_mvcc_range_total", "Total number of ranges seen by this member.")
	}
	return &metrics{
		puts:                   counter("etcd_mvcc_put_total", "Total number of puts seen by this member."),
		deletes:                counter("etcd_mvcc_delete_total", "Total number of deletes seen by this member."),
		ranges:                 counter("etcd_mvcc_range_total", "Total number of ranges seen by this member."),
		txns:                   counter("etcd_mvcc_txn_total", "Total number of txns seen by this member."),
		putSize:                prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_debugging_mvcc_total_put_size_in_bytes", Help: "The total size of put kv pairs seen by this member."}),
		events:                 counter("etcd_debugging_mvcc_events_total", "Total number of events sent by this member."),
		compactionKeys:         counter("etcd_debugging_mvcc_db_compaction_keys_total", "Total number of db keys compacted."),
		compactionLast:         prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_debugging_mvcc_db_compaction_last", Help: "The unix time of the last db compaction. Resets to 0 on start."}),
		compactionPauseMs:      hist("etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds", "Bucketed histogram of db compaction pause duration.", prometheus.ExponentialBuckets(1, 2, 13)),
		compactionTotalMs:      hist("etcd_debugging_mvcc_db_compaction_total_duration_milliseconds", "Bucketed histogram of db compaction total duration.", prometheus.ExponentialBuckets(100, 2, 14)),
		indexCompactionPauseMs: hist("etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds", "Bucketed histogram of index compaction pause duration.", prometheus.ExponentialBuckets(0.5, 2, 14)),
		hashRev:                hist("etcd_mvcc_hash_rev_duration_seconds", "The latency distribution of storage hash by revision operation.", prometheus.ExponentialBuckets(.01, 2, 15)),
		rangesDebug:            rangesDebug,
	}
}

// countRanges adds n ranges to the range counters.
func (m *metrics) countRanges(n int) {
	m.ranges.Add(float64(n))
	if m.rangesDebug != nil {
		m.rangesDebug.Add(float64(n))
	}
}

// Collectors are the store's metric families, for the member's registry.
func (s *Store) Collectors() []prometheus.Collector {
	m := s.metrics
	g := s.watch
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	cs := []prometheus.Collector{m.puts, m.deletes, m.ranges, m.txns, m.putSize, m.events, m.compactionKeys,
		m.compactionLast, m.compactionPauseMs, m.compactionTotalMs, m.indexCompactionPauseMs, m.hashRev,
		gauge("etcd_debugging_mvcc_watcher_total", "Total number of watchers.", func() float64 { n, _, _ := g.counts(); return float64(n) }),
		gauge("etcd_debugging_mvcc_slow_watcher_total", "Total number of unsynced slow watchers.", func() float64 { _, n, _ := g.counts(); return float64(n) }),
		gauge("etcd_debugging_mvcc_watch_stream_total", "Total number of watch streams.", func() float64 { _, _, n := g.counts(); return float64(n) }),
		gauge("etcd_debugging_mvcc_pending_events_total", "Total number of pending events to be sent.", func() float64 { return float64(g.pending()) }),
		gauge("etcd_mvcc_db_open_read_transactions", "The number of currently open read transactions", func() float64 { return float64(m.openReads.Load()) }),
	}
	if m.rangesDebug != nil {
		cs = append(cs, m.rangesDebug)
	}
	return cs
}

// txnEnded records one transaction's operations, as upstream counts them.
func (m *metrics) txnEnded(ranges, puts, deletes int, putSize int64) {
	if ranges+puts+deletes > 1 {
		m.txns.Inc()
	}
	m.countRanges(ranges)
	m.puts.Add(float64(puts))
	m.deletes.Add(float64(deletes))
	m.putSize.Add(float64(putSize))
}
