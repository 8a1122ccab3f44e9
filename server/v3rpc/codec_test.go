package v3rpc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
)

func TestCodecRoundTrips(t *testing.T) {
	resp := &pb.RangeResponse{Header: &pb.ResponseHeader{Revision: 42, ClusterId: 7}, Count: 2, More: true}
	for i := 0; i < 2; i++ {
		resp.Kvs = append(resp.Kvs, &mvccpb.KeyValue{Key: []byte{'k', byte('0' + i)}, Value: bytes.Repeat([]byte("v"), 300<<10), ModRevision: 40 + int64(i)})
	}
	data, err := codec{}.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := resp.Marshal()
	if got := data.Materialize(); !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from the generated Marshal (%d bytes, want %d)", len(got), len(want))
	}
	// Decode from a slice of several buffers, as gRPC hands a message split over frames.
	var parts mem.BufferSlice
	for off := 0; off < len(want); off += 16 << 10 {
		end := min(off+16<<10, len(want))
		parts = append(parts, mem.SliceBuffer(append([]byte(nil), want[off:end]...)))
	}
	var back pb.RangeResponse
	if err := (codec{}).Unmarshal(parts, &back); err != nil {
		t.Fatal(err)
	}
	if back.Header.Revision != 42 || back.Count != 2 || !back.More || len(back.Kvs) != 2 ||
		string(back.Kvs[1].Key) != "k1" || len(back.Kvs[1].Value) != 300<<10 || back.Kvs[1].ModRevision != 41 {
		t.Fatalf("decoded %v", back.String()[:100])
	}

	// A message without generated methods (the health service's) goes through gRPC's codec.
	h := &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}
	hd, err := codec{}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var hb grpc_health_v1.HealthCheckResponse
	if err := (codec{}).Unmarshal(hd, &hb); err != nil || hb.Status != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("health message round trip: %v %v", hb.Status, err)
	}

	// Damaged input is an error, not a panic.
	if err := (codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(want[:len(want)/2])}, &back); err == nil || !strings.Contains(err.Error(), "unmarshal") {
		t.Fatalf("truncated message: err = %v", err)
	}
}

// The client traffic counters count encoded message sizes, as upstream's codec does.
func TestCodecCountsTraffic(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := codec{traffic: NewTrafficCounter(reg)}
	req := &pb.PutRequest{Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 100)}
	data, err := c.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unmarshal(data, &pb.PutRequest{}); err != nil {
		t.Fatal(err)
	}
	h := &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}
	hd, err := c.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	wantSent := float64(req.Size() + hd.Len())
	if got := testutil.ToFloat64(c.traffic.sent); got != wantSent {
		t.Fatalf("sent bytes %v, want %v", got, wantSent)
	}
	if got := testutil.ToFloat64(c.traffic.received); got != float64(req.Size()) {
		t.Fatalf("received bytes %v, want %v", got, req.Size())
	}
}

// TestCodecPoolsOnlyMidSizedMessages: messages of a few KiB are marshalled into a pooled buffer
// that gRPC's Free returns, the smallest and the large ones into buffers of their own size; each
// encodes as the generated Marshal does, also into a buffer the pool hands out again dirty.
func TestCodecPoolsOnlyMidSizedMessages(t *testing.T) {
	for _, tc := range []struct {
		value  int
		pooled bool
	}{{10, false}, {5 << 10, true}, {20 << 10, true}, {2 << 10, true}, {40 << 10, false}} {
		for round := 0; round < 3; round++ {
			ev := &pb.WatchResponse{Header: &pb.ResponseHeader{Revision: int64(round + 1)}, WatchId: 3, Events: []*mvccpb.Event{
				{Kv: &mvccpb.KeyValue{Key: []byte("/registry/pods/ns/p"), Value: bytes.Repeat([]byte{byte('a' + round)}, tc.value), ModRevision: 9}},
			}}
			data, err := codec{}.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := ev.Marshal()
			if got := data.Materialize(); !bytes.Equal(got, want) {
				t.Fatalf("value %d, round %d: encoding differs from the generated Marshal", tc.value, round)
			}
			_, own := data[0].(mem.SliceBuffer)
			if len(data) != 1 || own == tc.pooled {
				t.Fatalf("value %d: %d buffers, pooled %t; want one, pooled %t", tc.value, len(data), !own, tc.pooled)
			}
			data.Free()
		}
	}
}
