package v3rpc

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CallMetrics count gRPC calls in the families upstream registers through grpc-ecosystem's
// prometheus provider: grpc_server_started_total, grpc_server_handled_total (by code),
// grpc_server_msg_received_total, grpc_server_msg_sent_total and, with --metrics=extensive,
// grpc_server_handling_seconds, with the same names, labels, help and buckets. Unlike the
// provider, which looks every counter up by its label values on every call (four lookups a
// unary call, a twentieth of a serializable get's CPU on three members), a method's counters
// are looked up once and kept.
type CallMetrics struct {
	started, handled, received, sent *prometheus.CounterVec
	handling                         *prometheus.HistogramVec // nil unless extensive

	methods sync.Map // full method name -> *methodCounters
}

// methodCounters are one method's series.
type methodCounters struct {
	started, received, sent prometheus.Counter
	handled                 [codes.Unauthenticated + 1]prometheus.Counter // by code, 0 to 16
	handling                prometheus.Observer                           // nil unless extensive
	labels                  [3]string                                     // grpc_type, grpc_service, grpc_method
	m                       *CallMetrics
}

// NewCallMetrics returns the call counters; handlingTime adds the latency histogram.
func NewCallMetrics(handlingTime bool) *CallMetrics {
	labels := []string{"grpc_type", "grpc_service", "grpc_method"}
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &CallMetrics{
		started:  counter("grpc_server_started_total", "Total number of RPCs started on the server.", labels),
		handled:  counter("grpc_server_handled_total", "Total number of RPCs completed on the server, regardless of success or failure.", append(labels, "grpc_code")),
		received: counter("grpc_server_msg_received_total", "Total number of RPC stream messages received on the server.", labels),
		sent:     counter("grpc_server_msg_sent_total", "Total number of gRPC stream messages sent by the server.", labels),
	}
	if handlingTime {
		m.handling = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "grpc_server_handling_seconds",
			Help:    "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
			Buckets: prometheus.DefBuckets}, labels)
	}
	return m
}

// Describe is prometheus.Collector's.
func (m *CallMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range []*prometheus.CounterVec{m.started, m.handled, m.received, m.sent} {
		c.Describe(ch)
	}
	if m.handling != nil {
		m.handling.Describe(ch)
	}
}

// Collect is prometheus.Collector's.
func (m *CallMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range []*prometheus.CounterVec{m.started, m.handled, m.received, m.sent} {
		c.Collect(ch)
	}
	if m.handling != nil {
		m.handling.Collect(ch)
	}
}

// Initialize makes every method of gs show at zero, with each code, as dashboards expect.
func (m *CallMetrics) Initialize(gs *grpc.Server) {
	for service, info := range gs.GetServiceInfo() {
		for _, mi := range info.Methods {
			m.method("/"+service+"/"+mi.Name, callType(mi.IsClientStream, mi.IsServerStream))
		}
	}
}

// callType is the grpc_type label of a method.
func callType(clientStream, serverStream bool) string {
	switch {
	case clientStream && serverStream:
		return "bidi_stream"
	case clientStream:
		return "client_stream"
	case serverStream:
		return "server_stream"
	}
	return "unary"
}

// method returns fullMethod's counters, creating its series the first time.
func (m *CallMetrics) method(fullMethod, typ string) *methodCounters {
	if c, ok := m.methods.Load(fullMethod); ok {
		return c.(*methodCounters)
	}
	service, name := "unknown", "unknown"
	if s, n, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/"); ok {
		service, name = s, n
	}
	c := &methodCounters{labels: [3]string{typ, service, name}, m: m}
	c.started = m.started.WithLabelValues(c.labels[:]...)
	c.received = m.received.WithLabelValues(c.labels[:]...)
	c.sent = m.sent.WithLabelValues(c.labels[:]...)
	for code := range c.handled {
		c.handled[code] = m.handled.WithLabelValues(typ, service, name, codes.Code(code).String())
	}
	if m.handling != nil {
		c.handling = m.handling.WithLabelValues(c.labels[:]...)
	}
	actual, _ := m.methods.LoadOrStore(fullMethod, c)
	return actual.(*methodCounters)
}

// done counts a finished call by its status code, as the gRPC server reports it.
func (c *methodCounters) done(err error, start time.Time) {
	s, ok := status.FromError(err)
	if !ok {
		s = status.FromContextError(err)
	}
	if code := s.Code(); int(code) < len(c.handled) {
		c.handled[code].Inc()
	} else {
		c.m.handled.WithLabelValues(c.labels[0], c.labels[1], c.labels[2], code.String()).Inc()
	}
	if c.handling != nil {
		c.handling.Observe(time.Since(start).Seconds())
	}
}

// UnaryServerInterceptor counts unary calls: started and received on arrival, sent if the
// handler answered, handled by code.
func (m *CallMetrics) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		c := m.method(info.FullMethod, "unary")
		var start time.Time
		if c.handling != nil {
			start = time.Now()
		}
		c.started.Inc()
		c.received.Inc()
		resp, err := h(ctx, req)
		if err == nil {
			c.sent.Inc()
		}
		c.done(err, start)
		return resp, err
	}
}

// StreamServerInterceptor counts streams: started on arrival, each message received or sent
// without error, handled by code at the end.
func (m *CallMetrics) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		c := m.method(info.FullMethod, callType(info.IsClientStream, info.IsServerStream))
		var start time.Time
		if c.handling != nil {
			start = time.Now()
		}
		c.started.Inc()
		err := h(srv, &countedStream{ServerStream: ss, c: c})
		c.done(err, start)
		return err
	}
}

// countedStream counts a stream's messages.
type countedStream struct {
	grpc.ServerStream
	c *methodCounters
}

func (s *countedStream) SendMsg(msg any) error {
	err := s.ServerStream.SendMsg(msg)
	if err == nil {
		s.c.sent.Inc()
	}
	return err
}

func (s *countedStream) RecvMsg(msg any) error {
	err := s.ServerStream.RecvMsg(msg)
	if err == nil {
		s.c.received.Inc()
	}
	return err
}
