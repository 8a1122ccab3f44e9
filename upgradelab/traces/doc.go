// Package traces gathers a run's OpenTelemetry spans, the lab's own and the members', in one
// place: an OTLP/gRPC receiver the lab runs (members are started with etcd's
// --enable-distributed-tracing flags pointed at it), and writes them as an OTLP JSON file that
// Jaeger and Grafana Tempo import.
//
// The files:
//
//	collector.go  Collector: the OTLP/gRPC receiver
//	setup.go      Start: the collector and the lab's tracer providers, the members' tracing flags
//	otlpjson.go   spans as an OTLP JSON file
package traces
