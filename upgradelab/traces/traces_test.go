package traces

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
)

// The lab's spans reach the collector through OTLP/gRPC, and the file holds them in OTLP
// JSON: hex IDs, numeric enums, lowerCamelCase names, and a parent link that matches.
func TestSpansRoundTripThroughCollectorAndOTLPJSON(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	pctx, parent := s.Tracer().Start(ctx, "run upgrade", trace.WithAttributes(attribute.Int("members", 3)))
	_, child := s.Tracer().Start(pctx, "replace", trace.WithSpanKind(trace.SpanKindClient))
	child.End()
	parent.End()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	spans, dropped := s.Collector.Take()
	if Count(spans) != 2 || dropped != 0 {
		t.Fatalf("collector holds %d spans (%d dropped), want 2", Count(spans), dropped)
	}
	b, err := MarshalJSON(spans)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []struct {
					Key   string
					Value struct{ StringValue string }
				}
			}
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string `json:"traceId"`
					SpanID       string `json:"spanId"`
					ParentSpanID string `json:"parentSpanId"`
					Name         string `json:"name"`
					Kind         int    `json:"kind"`
					Start        string `json:"startTimeUnixNano"`
				}
			}
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	byName := map[string]int{}
	ids := map[string][3]string{}
	for _, rs := range doc.ResourceSpans {
		if a := rs.Resource.Attributes; !slices.ContainsFunc(a, func(kv struct {
			Key   string
			Value struct{ StringValue string }
		}) bool {
			return kv.Key == "service.name" && kv.Value.StringValue == "upgradelab"
		}) {
			t.Fatalf("resource attributes %v", a)
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				byName[sp.Name] = sp.Kind
				ids[sp.Name] = [3]string{sp.TraceID, sp.SpanID, sp.ParentSpanID}
				if sp.Start == "" {
					t.Fatalf("span %s has no start time", sp.Name)
				}
			}
		}
	}
	if byName["replace"] != 3 || byName["run upgrade"] != 1 { // SPAN_KIND_CLIENT, SPAN_KIND_INTERNAL
		t.Fatalf("span kinds %v\n%s", byName, b)
	}
	run, rep := ids["run upgrade"], ids["replace"]
	for _, id := range []string{run[0], run[1], rep[2]} {
		if _, err := hex.DecodeString(id); err != nil || id == "" {
			t.Fatalf("id %q is not hex\n%s", id, b)
		}
	}
	if len(run[0]) != 32 || len(run[1]) != 16 || rep[0] != run[0] || rep[2] != run[1] {
		t.Fatalf("ids run %v replace %v", run, rep)
	}
	back, err := UnmarshalJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(spans) {
		t.Fatalf("read back %d resource spans of %d", len(back), len(spans))
	}
	for i := range back {
		if !proto.Equal(back[i], spans[i]) {
			t.Fatalf("resource spans %d changed in the round trip", i)
		}
	}
}

func TestCollectorBoundsWhatItKeeps(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	s.Collector.limit = 3
	for i := 0; i < 5; i++ {
		_, sp := s.Tracer().Start(ctx, "step")
		sp.End()
		if err := s.Flush(ctx); err != nil { // one export per span
			t.Fatal(err)
		}
	}
	spans, dropped := s.Collector.Take()
	if Count(spans) != 3 || dropped != 2 {
		t.Fatalf("kept %d, dropped %d; want 3 and 2", Count(spans), dropped)
	}
	if again, d := s.Collector.Take(); len(again) != 0 || d != 0 {
		t.Fatal("take did not drain")
	}
}

func TestMemberFlagsBySpelling(t *testing.T) {
	tests := []struct {
		level, first string
	}{
		{"3.5", "--experimental-enable-distributed-tracing"},
		{"3.6", "--enable-distributed-tracing"},
		{"3.7", "--enable-distributed-tracing"},
		{"4.0", "--enable-distributed-tracing"},
	}
	for _, tc := range tests {
		got := MemberFlags(tc.level, "10.0.0.1:4317", "m2", 0.01)
		if got[0] != tc.first || got[1] != tc.first[:len(tc.first)-len("enable-distributed-tracing")]+"distributed-tracing-address=10.0.0.1:4317" {
			t.Errorf("level %s: %v", tc.level, got)
		}
		if got[3] != tc.first[:len(tc.first)-len("enable-distributed-tracing")]+"distributed-tracing-instance-id=m2" ||
			got[4] != tc.first[:len(tc.first)-len("enable-distributed-tracing")]+"distributed-tracing-sampling-rate=10000" {
			t.Errorf("level %s: %v", tc.level, got)
		}
	}
	if got := MemberFlags("3.4", "10.0.0.1:4317", "m2", 0.01); got != nil {
		t.Errorf("3.4 has no tracing flags, got %v", got)
	}
}

func TestStartRefusesABadRatio(t *testing.T) {
	for _, r := range []float64{-0.1, 1.5} {
		if _, err := Start(context.Background(), r); err == nil {
			t.Errorf("ratio %v accepted", r)
		}
	}
}
