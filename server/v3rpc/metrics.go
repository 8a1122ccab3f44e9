package v3rpc

import (
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
