package e2e

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// otlpReceiver is an OTLP/gRPC trace collector that keeps what it receives.
type otlpReceiver struct {
	collectorpb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans map[string]map[string]string // span name -> resource attributes
}

func (r *otlpReceiver) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		attrs := map[string]string{}
		for _, kv := range rs.GetResource().GetAttributes() {
			attrs[kv.Key] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				r.spans[sp.Name] = attrs
			}
		}
	}
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// TestDistributedTracing: with --enable-distributed-tracing a member sends OTLP spans of a
// client request and of its write path (raft proposal, commit, apply) to the collector at
// --distributed-tracing-address, with the service name and instance ID it was given.
func TestDistributedTracing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &otlpReceiver{spans: map[string]map[string]string{}}
	gs := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(gs, rcv)
	go gs.Serve(l)
	defer gs.Stop()

	m := NewMember(t, "--enable-distributed-tracing", "--distributed-tracing-address", l.Addr().String(),
		"--distributed-tracing-service-name", "etcd-under-test", "--distributed-tracing-instance-id", "member-1",
		"--distributed-tracing-sampling-rate", "1000000")
	m.Start()
	if _, err := m.Client().Put(Ctx(t), "traced", "v"); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(); err != nil { // the member sends what it buffered as it stops
		t.Fatal(err)
	}
	want := []string{"etcdserverpb.KV/Put", "raft proposal", "raft commit", "apply"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rcv.mu.Lock()
		missing := ""
		for _, w := range want {
			if _, ok := rcv.spans[w]; !ok {
				missing = w
			}
		}
		attrs := rcv.spans["etcdserverpb.KV/Put"]
		got := len(rcv.spans)
		rcv.mu.Unlock()
		if missing == "" {
			if attrs["service.name"] != "etcd-under-test" || attrs["service.instance.id"] != "member-1" {
				t.Fatalf("resource attributes %v", attrs)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q span among the %d received\n%s", missing, got, m.LogTail(10))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
