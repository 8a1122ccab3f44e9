package v3rpc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TrafficCounter counts the bytes of client messages under upstream's metric names. Like
// upstream's, it counts encoded message sizes in the codec, not frames on the wire: a gRPC stats
// handler would cost every request a copy of its metadata and an event per stage.
type TrafficCounter struct {
	received, sent prometheus.Counter
}

// NewTrafficCounter registers the client traffic counters in reg.
func NewTrafficCounter(reg prometheus.Registerer) *TrafficCounter {
	t := &TrafficCounter{
		received: prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_network_client_grpc_received_bytes_total", Help: "The total number of bytes received from grpc clients."}),
		sent:     prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_network_client_grpc_sent_bytes_total", Help: "The total number of bytes sent to grpc clients."}),
	}
	reg.MustRegister(t.received, t.sent)
	return t
}

func (t *TrafficCounter) countSent(n int) {
	if t != nil {
		t.sent.Add(float64(n))
	}
}

func (t *TrafficCounter) countReceived(n int) {
	if t != nil {
		t.received.Add(float64(n))
	}
}

// WatchLoopMetrics are upstream 3.7's histograms of the watch send loop: how long sending one
// response of events takes (in all, and per event), one control response (a watcher created or
// cancelled) and one round of progress requests.
type WatchLoopMetrics struct {
	events, perEvent, control, progress prometheus.Histogram
}

// NewWatchLoopMetrics registers the watch send loop's histograms in reg.
func NewWatchLoopMetrics(reg prometheus.Registerer) *WatchLoopMetrics {
	h := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "etcd_debugging_server_" + name, Help: help,
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)})
	}
	m := &WatchLoopMetrics{
		events:   h("watch_send_loop_watch_stream_duration_seconds", "The total duration in seconds of running through the send loop watch stream response all events."),
		perEvent: h("watch_send_loop_watch_stream_duration_per_event_seconds", "The average duration in seconds of running through the send loop watch stream response, per event."),
		control:  h("watch_send_loop_control_stream_duration_seconds", "The total duration in seconds of running through the send loop control stream response."),
		progress: h("watch_send_loop_progress_duration_seconds", "The total duration in seconds of running through the progress loop control stream response."),
	}
	reg.MustRegister(m.events, m.perEvent, m.control, m.progress)
	return m
}

func (m *WatchLoopMetrics) sentEvents(start time.Time, events int) {
	if m == nil {
		return
	}
	d := time.Since(start).Seconds()
	m.events.Observe(d)
	m.perEvent.Observe(d / float64(events)) // as upstream: +Inf for a response without events
}

func (m *WatchLoopMetrics) sentControl(start time.Time) {
	if m != nil {
		m.control.Observe(time.Since(start).Seconds())
	}
}

func (m *WatchLoopMetrics) requestedProgress(start time.Time) {
	if m != nil {
		m.progress.Observe(time.Since(start).Seconds())
	}
}
