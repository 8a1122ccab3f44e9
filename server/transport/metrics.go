package transport

import (
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// probeInterval is how often each peer is probed for etcd_network_peer_round_trip_time_seconds.
const probeInterval = 5 * time.Second

// metrics are upstream's etcd_network_* peer families; the member registers Collectors.
type metrics struct {
	sentBytes, recvBytes, sentFailures, recvFailures, disconnected *prometheus.CounterVec
	activeGauge                                                    *prometheus.GaugeVec
	snapSendOK, snapSendFail, snapRecvOK, snapRecvFail             *prometheus.CounterVec
	snapSendInflight, snapRecvInflight                             *prometheus.GaugeVec
	snapSendTime, snapRecvTime, rtt                                *prometheus.HistogramVec
}

func newMetrics() *metrics {
	counter := func(name, help, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	}
	gauge := func(name, help, label string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{label})
	}
	hist := func(name, help, label string, b []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b}, []string{label})
	}
	return &metrics{
		activeGauge:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcd_network_active_peers", Help: "The current number of active peer connections."}, []string{"Local", "Remote"}),
		disconnected:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_network_disconnected_peers_total", Help: "The total number of disconnected peers."}, []string{"Local", "Remote"}),
		sentBytes:        counter("etcd_network_peer_sent_bytes_total", "The total number of bytes sent to peers.", "To"),
		recvBytes:        counter("etcd_network_peer_received_bytes_total", "The total number of bytes received from peers.", "From"),
		sentFailures:     counter("etcd_network_peer_sent_failures_total", "The total number of send failures from peers.", "To"),
		recvFailures:     counter("etcd_network_peer_received_failures_total", "The total number of receive failures from peers.", "From"),
		snapSendOK:       counter("etcd_network_snapshot_send_success", "Total number of successful snapshot sends", "To"),
		snapSendFail:     counter("etcd_network_snapshot_send_failures", "Total number of snapshot send failures", "To"),
		snapRecvOK:       counter("etcd_network_snapshot_receive_success", "Total number of successful snapshot receives", "From"),
		snapRecvFail:     counter("etcd_network_snapshot_receive_failures", "Total number of snapshot receive failures", "From"),
		snapSendInflight: gauge("etcd_network_snapshot_send_inflights_total", "Total number of inflight snapshot sends", "To"),
		snapRecvInflight: gauge("etcd_network_snapshot_receive_inflights_total", "Total number of inflight snapshot receives", "From"),
		snapSendTime:     hist("etcd_network_snapshot_send_total_duration_seconds", "Total latency distributions of v3 snapshot sends", "To", prometheus.ExponentialBuckets(0.1, 2, 10)),
		snapRecvTime:     hist("etcd_network_snapshot_receive_total_duration_seconds", "Total latency distributions of v3 snapshot receives", "From", prometheus.ExponentialBuckets(0.1, 2, 10)),
		rtt:              hist("etcd_network_peer_round_trip_time_seconds", "Round-Trip-Time histogram between peers", "To", prometheus.ExponentialBuckets(0.0001, 2, 16)),
	}
}

// Collectors are the transport's metric families, for the member's registry.
func (t *Transport) Collectors() []prometheus.Collector {
	m := t.m
	return []prometheus.Collector{m.activeGauge, m.disconnected, m.sentBytes, m.recvBytes, m.sentFailures, m.recvFailures,
		m.snapSendOK, m.snapSendFail, m.snapRecvOK, m.snapRecvFail, m.snapSendInflight, m.snapRecvInflight,
		m.snapSendTime, m.snapRecvTime, m.rtt}
}

// countingWriter counts the bytes a stream writes to one peer.
type countingWriter struct {
	w io.Writer
	c prometheus.Counter
}

func (cw countingWriter) Write(b []byte) (int, error) {
	n, err := cw.w.Write(b)
	cw.c.Add(float64(n))
	return n, err
}

// countingReader counts the bytes a stream reads from one peer.
type countingReader struct {
	r io.Reader
	c prometheus.Counter
}

func (cr countingReader) Read(b []byte) (int, error) {
	n, err := cr.r.Read(b)
	cr.c.Add(float64(n))
	return n, err
}

// probe measures the round trip to a peer every probeInterval until it is removed, as
// upstream's prober does.
func (p *peer) probe() {
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		req, err := http.NewRequestWithContext(p.ctx, http.MethodGet, p.pickURL()+ProbingPath, nil)
		if err != nil {
			continue
		}
		resp, err := p.t.pipelineRT.RoundTrip(req)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			p.t.m.rtt.WithLabelValues(hexID(p.id)).Observe(time.Since(start).Seconds())
		}
	}
}
