package v3rpc

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/stats"
)

// trafficCounter counts client gRPC bytes on the wire under upstream's metric names.
type trafficCounter struct {
	received, sent prometheus.Counter
}

// NewTrafficCounter registers the client traffic counters in reg.
func NewTrafficCounter(reg prometheus.Registerer) stats.Handler {
	t := &trafficCounter{
		received: prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_network_client_grpc_received_bytes_total", Help: "The total number of bytes received from grpc clients."}),
		sent:     prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_network_client_grpc_sent_bytes_total", Help: "The total number of bytes sent to grpc clients."}),
	}
	reg.MustRegister(t.received, t.sent)
	return t
}

func (t *trafficCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (t *trafficCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (t *trafficCounter) HandleConn(context.Context, stats.ConnStats) {}

func (t *trafficCounter) HandleRPC(_ context.Context, s stats.RPCStats) {
	switch p := s.(type) {
	case *stats.InPayload:
		t.received.Add(float64(p.WireLength))
	case *stats.OutPayload:
		t.sent.Add(float64(p.WireLength))
	}
}
