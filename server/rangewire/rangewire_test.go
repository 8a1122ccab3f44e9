package rangewire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/pkg/rangestream"
)

// TestWireIsTheGeneratedEncoding: an answer built from stored records, or from key-values, is
// byte for byte what the generated Marshal makes of the same RangeResponse, and of the same
// RangeStreamResponse as a chunk; Size agrees and Decode gives the response back.
func TestWireIsTheGeneratedEncoding(t *testing.T) {
	kv := func(i, size int) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(fmt.Sprintf("key/%05d", i)), Value: []byte(strings.Repeat("v", size)),
			CreateRevision: int64(i + 2), ModRevision: int64(3*i + 2), Version: int64(i%7 + 1), Lease: int64(i % 3)}
	}
	many := func(n, size int) []*mvccpb.KeyValue {
		kvs := make([]*mvccpb.KeyValue, n)
		for i := range kvs {
			kvs[i] = kv(i, size)
		}
		return kvs
	}
	header := &pb.ResponseHeader{ClusterId: 14841639068965178418, MemberId: 10276657743932975437, Revision: 99, RaftTerm: 3}
	for _, tc := range []struct {
		name string
		want pb.RangeResponse
	}{
		{"empty", pb.RangeResponse{Header: header}},
		{"one key", pb.RangeResponse{Header: header, Kvs: many(1, 10), Count: 1}},
		{"a page with more", pb.RangeResponse{Header: header, Kvs: many(500, 100), More: true, Count: 2000}},
		{"large values", pb.RangeResponse{Header: header, Kvs: many(40, 70<<10), Count: 40}},
		{"empty value, no header", pb.RangeResponse{Kvs: []*mvccpb.KeyValue{{Key: []byte("k"), ModRevision: 5, CreateRevision: 5, Version: 1}}}},
		{"count only", pb.RangeResponse{Header: header, Count: 12345}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := tc.want.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			wantChunk, err := (&rangestream.Response{RangeResponse: &tc.want}).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			recs := make([][]byte, len(tc.want.Kvs))
			for i, kv := range tc.want.Kvs {
				if recs[i], err = kv.Marshal(); err != nil {
					t.Fatal(err)
				}
			}
			p := NewPool(2, 8<<20)
			fromKVs, err := p.EncodeKVs(tc.want.Kvs)
			if err != nil {
				t.Fatal(err)
			}
			for _, enc := range []struct {
				from string
				resp func() *Response
			}{
				{"records", func() *Response { return NewResponse(p.EncodeRecords(recs), len(recs)) }},
				{"key-values", func() *Response { return NewResponse(fromKVs, len(tc.want.Kvs)) }},
			} {
				mk := func() *Response {
					r := enc.resp()
					r.Header, r.More, r.Count = tc.want.Header, tc.want.More, tc.want.Count
					return r
				}
				r := mk()
				dec, err := decode(r)
				if err != nil {
					t.Fatalf("from %s: decode: %v", enc.from, err)
				}
				if got, err := dec.Marshal(); err != nil || !bytes.Equal(got, want) {
					t.Errorf("from %s: decoded %v, want %v (%v)", enc.from, dec, &tc.want, err)
				}
				if got := r.Size(); got != len(want) {
					t.Errorf("from %s: Size %d, want %d", enc.from, got, len(want))
				}
				if got := (Chunk{r}).Size(); got != len(wantChunk) {
					t.Errorf("from %s: chunk Size %d, want %d", enc.from, got, len(wantChunk))
				}
				out, err := r.Wire()
				if err != nil {
					t.Fatal(err)
				}
				if got := out.Materialize(); !bytes.Equal(got, want) {
					t.Errorf("from %s: wire encoding differs from the generated Marshal (%d bytes, want %d)", enc.from, len(got), len(want))
				}
				out.Free()
				if enc.from == "key-values" {
					// the buffer went to gRPC's side with the first Wire; make it again
					if fromKVs, err = p.EncodeKVs(tc.want.Kvs); err != nil {
						t.Fatal(err)
					}
				}
				chunk, err := (Chunk{mk()}).Wire()
				if err != nil {
					t.Fatal(err)
				}
				if got := chunk.Materialize(); !bytes.Equal(got, wantChunk) {
					t.Errorf("from %s: chunk encoding differs from RangeStreamResponse's (%d bytes, want %d)", enc.from, len(got), len(wantChunk))
				}
				chunk.Free()
			}
		})
	}
}

// TestPoolKeepsTheLargestFew: sent buffers come back to the next answers; the pool keeps at most
// keep of them, the largest, and none below the pooling size or above its maximum.
func TestPoolKeepsTheLargestFew(t *testing.T) {
	const keep, max = 2, 1 << 20
	p := NewPool(keep, max)
	put := func(size int) *[]byte {
		b := make([]byte, size)
		p.Put(&b)
		return &b
	}
	put(smallest - 1)
	put(max + 1)
	if n, _ := p.Kept(); n != 0 {
		t.Fatalf("kept %d buffers outside the pooled sizes", n)
	}
	put(100 << 10)
	b := put(300 << 10)
	put(200 << 10) // replaces the 100 KiB one
	if n, bytes := p.Kept(); n != keep || bytes != 500<<10 {
		t.Fatalf("kept %d buffers of %d bytes, want %d of %d", n, bytes, keep, 500<<10)
	}
	put(64 << 10) // smaller than every kept one: dropped
	if _, bytes := p.Kept(); bytes != 500<<10 {
		t.Fatalf("kept %d bytes after a smaller buffer came back, want %d", bytes, 500<<10)
	}
	if got := p.Get(250 << 10); &(*got)[:1][0] != &(*b)[:1][0] || len(*got) != 250<<10 {
		t.Errorf("Get(250 KiB) did not reuse the 300 KiB buffer at length 250 KiB")
	}
	if got := p.Get(250 << 10); len(*got) != 250<<10 || cap(*got) != roundUp(250<<10) {
		t.Errorf("Get(250 KiB) with only 200 KiB kept: length %d, capacity %d, want a new buffer", len(*got), cap(*got))
	}
	// A buffer handed to gRPC returns when gRPC frees it.
	recs := [][]byte{bytes.Repeat([]byte{1}, 100<<10)}
	p = NewPool(keep, max)
	buf := p.EncodeRecords(recs)
	if n, _ := p.Kept(); n != 0 {
		t.Fatalf("kept %d buffers before any was freed", n)
	}
	buf.Free()
	if n, _ := p.Kept(); n != 1 {
		t.Fatalf("kept %d buffers after the encoded answer was freed, want 1", n)
	}
}

// decode is the RangeResponse r encodes; it leaves r as it was.
func decode(r *Response) (*pb.RangeResponse, error) {
	out := r.head()
	out.More, out.Count = r.More, r.Count
	if r.kvs == nil {
		return out, nil
	}
	var kvs pb.RangeResponse
	if err := kvs.Unmarshal(r.kvs.ReadOnlyData()); err != nil {
		return nil, fmt.Errorf("rangewire: decode kvs: %w", err)
	}
	out.Kvs = kvs.Kvs
	return out, nil
}
