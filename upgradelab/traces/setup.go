package traces

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/stats"
)

// Setup is the lab's tracing: the collector, the tracer of the lab's own spans (every one
// kept), and the tracer provider of the workload client's requests, which keeps a sample of
// requests made outside any lab span and every request made inside one. Requests carry their
// trace context to the members (W3C trace context, as etcd expects), so a member's spans of a
// request the lab made in a step sit under that step in the trace.
type Setup struct {
	Collector *Collector
	// Ratio is the share of workload requests traced (0..1).
	Ratio  float64
	lab    *sdktrace.TracerProvider
	client *sdktrace.TracerProvider
}

// MaxSpans bounds what one run keeps.
const MaxSpans = 200000

// Start runs the collector on loopback and the lab's tracer providers, which export to it.
func Start(ctx context.Context, ratio float64) (*Setup, error) {
	if ratio < 0 || ratio > 1 {
		return nil, fmt.Errorf("trace sampling ratio %v: want 0..1", ratio)
	}
	c := NewCollector(MaxSpans)
	addr, err := c.Listen(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		return nil, err
	}
	s := &Setup{Collector: c, Ratio: ratio}
	newTP := func(service string, sampler sdktrace.Sampler) (*sdktrace.TracerProvider, error) {
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithInsecure(), otlptracegrpc.WithEndpoint(addr))
		if err != nil {
			return nil, fmt.Errorf("trace exporter: %w", err)
		}
		return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sampler),
			sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service)))), nil
	}
	if s.lab, err = newTP("upgradelab", sdktrace.AlwaysSample()); err != nil {
		c.Stop()
		return nil, err
	}
	if s.client, err = newTP("upgradelab-client", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))); err != nil {
		s.lab.Shutdown(ctx)
		c.Stop()
		return nil, err
	}
	return s, nil
}

// Tracer is the tracer of the lab's own spans.
func (s *Setup) Tracer() trace.Tracer { return s.lab.Tracer("etcdx/upgradelab") }

// ClientHandler traces the workload client's requests and sends their context along.
func (s *Setup) ClientHandler() stats.Handler {
	return otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(s.client),
		otelgrpc.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))
}

// Flush sends every span the lab has ended to the collector.
func (s *Setup) Flush(ctx context.Context) error {
	return errors.Join(s.lab.ForceFlush(ctx), s.client.ForceFlush(ctx))
}

// Close flushes and stops everything.
func (s *Setup) Close(ctx context.Context) error {
	err := errors.Join(s.lab.Shutdown(ctx), s.client.Shutdown(ctx))
	s.Collector.Stop()
	return err
}

// MemberFlags are the flags that make a member of the given level (major.minor) send its spans
// to collector (host:port), named after the member. 3.5 knows only the --experimental-
// spellings; 3.6 and later take the plain ones; 3.4 has no tracing (none: it refuses unknown
// flags).
func MemberFlags(level, collector, member string, ratio float64) []string {
	if levelBefore(level, 3, 5) {
		return nil
	}
	prefix := "--"
	if levelBefore(level, 3, 6) {
		prefix = "--experimental-"
	}
	return []string{
		prefix + "enable-distributed-tracing",
		prefix + "distributed-tracing-address=" + collector,
		prefix + "distributed-tracing-service-name=etcd",
		prefix + "distributed-tracing-instance-id=" + member,
		prefix + "distributed-tracing-sampling-rate=" + strconv.Itoa(int(ratio*1e6)),
	}
}

func levelBefore(level string, major, minor int) bool {
	a, b, ok := strings.Cut(level, ".")
	if !ok {
		return false
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return x < major || x == major && y < minor
}
