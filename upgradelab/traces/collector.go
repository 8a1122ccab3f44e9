package traces

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Collector is an OTLP/gRPC trace receiver that keeps what it receives, up to a bound, until
// taken. One gRPC server serves every address it listens on (loopback for the lab's own
// exporters and process members, a container network's gateway for containers).
type Collector struct {
	collectorpb.UnimplementedTraceServiceServer
	srv   *grpc.Server
	limit int

	mu        sync.Mutex
	listeners map[netip.Addr]net.Listener
	received  []*tracepb.ResourceSpans
	spans     int
	dropped   int
}

// NewCollector keeps at most limit spans between takes; more are counted as dropped.
func NewCollector(limit int) *Collector {
	c := &Collector{limit: limit, listeners: map[netip.Addr]net.Listener{}}
	// Members send batches of up to a few MB; the default 4 MB receive limit is too tight for
	// a member flushing at shutdown.
	c.srv = grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	collectorpb.RegisterTraceServiceServer(c.srv, c)
	return c
}

// Listen makes the collector reachable at ip (a port of its own choosing) and returns the
// host:port to give exporters. Listening again on the same ip returns the same address.
func (c *Collector) Listen(ip netip.Addr) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.listeners[ip]; ok {
		return l.Addr().String(), nil
	}
	l, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		return "", fmt.Errorf("trace receiver on %s: %w", ip, err)
	}
	c.listeners[ip] = l
	go c.srv.Serve(l)
	return l.Addr().String(), nil
}

// Unlisten stops listening at ip (a run's network is about to go away).
func (c *Collector) Unlisten(ip netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.listeners[ip]; ok {
		l.Close()
		delete(c.listeners, ip)
	}
}

// Export implements the OTLP trace service.
func (c *Collector) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		n := 0
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
		if c.spans+n > c.limit {
			c.dropped += n
			continue
		}
		c.spans += n
		c.received = append(c.received, rs)
	}
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// Take returns what was received since the last take, and how many spans did not fit.
func (c *Collector) Take() (spans []*tracepb.ResourceSpans, dropped int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	spans, dropped = c.received, c.dropped
	c.received, c.spans, c.dropped = nil, 0, 0
	return spans, dropped
}

// Stop ends every listener and the server.
func (c *Collector) Stop() {
	c.srv.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for ip, l := range c.listeners {
		l.Close() // already closed by the server's stop, most likely
		delete(c.listeners, ip)
	}
}

// Count is the number of spans in rs.
func Count(rs []*tracepb.ResourceSpans) int {
	n := 0
	for _, r := range rs {
		for _, ss := range r.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}
