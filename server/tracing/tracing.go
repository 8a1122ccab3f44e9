// Package tracing exports OpenTelemetry spans of client requests and of the write path over
// OTLP/gRPC, as upstream's --enable-distributed-tracing does: a batching exporter to
// --distributed-tracing-address, the service name and instance ID as resource attributes, and
// a parent-based sampler at --distributed-tracing-sampling-rate spans per million.
package tracing

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/stats"
)

// MaxSamplingRate is the sampling rate that samples every request (per million).
const MaxSamplingRate = 1000000

// Config holds the tracing flags.
type Config struct {
	Enabled                bool
	Address                string
	ServiceName            string
	InstanceID             string
	SamplingRatePerMillion int
}

// Validate reports upstream's refusals.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	switch {
	case c.SamplingRatePerMillion < 0:
		return errors.New("distributed tracing configurition is not valid: (tracing sampling rate must be positive)")
	case c.SamplingRatePerMillion > MaxSamplingRate:
		return fmt.Errorf("distributed tracing configurition is not valid: (tracing sampling rate must be less than %d)", MaxSamplingRate)
	}
	return nil
}

// Tracer is a running exporter; its StatsHandler instruments a gRPC server.
type Tracer struct {
	provider *sdktrace.TracerProvider
}

// Start connects the exporter (lazily, as OTLP does: an unreachable collector only delays
// spans) and returns the tracer.
func Start(ctx context.Context, c Config) (*Tracer, error) {
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithInsecure(), otlptracegrpc.WithEndpoint(c.Address))
	if err != nil {
		return nil, fmt.Errorf("distributed tracing: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", c.ServiceName)}
	if c.InstanceID != "" {
		attrs = append(attrs, attribute.String("service.instance.id", c.InstanceID))
	}
	sampler := sdktrace.NeverSample()
	if c.SamplingRatePerMillion > 0 {
		sampler = sdktrace.TraceIDRatioBased(float64(c.SamplingRatePerMillion) / MaxSamplingRate)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sampler)))
	return &Tracer{provider: tp}, nil
}

// StatsHandler makes a server span of every gRPC call, continuing the client's trace.
func (t *Tracer) StatsHandler() stats.Handler {
	return otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(t.provider),
		otelgrpc.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))
}

// Close sends what is buffered and stops the exporter.
func (t *Tracer) Close(ctx context.Context) error {
	return t.provider.Shutdown(ctx)
}
