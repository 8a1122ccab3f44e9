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
		{"values larger than a segment", pb.RangeResponse{Header: header, Kvs: many(3, SegmentSize+1000), Count: 3}},
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
			p := NewPool(8 << 20)
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

// TestPoolReusesSegments: a large answer is written into segments, which come back to the pool
// when gRPC frees them and go into the next answers whatever their size; the pool keeps at most
// its bytes' worth, and no buffer of another size. A small answer has a buffer of its own.
func TestPoolReusesSegments(t *testing.T) {
	const keep = 4
	p := NewPool(keep * SegmentSize)
	records := func(total int) [][]byte {
		recs := make([][]byte, total/(10<<10))
		for i := range recs {
			recs[i] = bytes.Repeat([]byte{byte(i)}, 10<<10-4)
		}
		return recs
	}
	// 4.7 and 2.3 segments' worth of records of about 10 KiB: 5 and 3 segments.
	first := p.EncodeRecords(records(SegmentSize * 47 / 10))
	if len(first) != 5 {
		t.Fatalf("answer of 4.7 segments in %d buffers, want 5 segments", len(first))
	}
	if n, _ := p.Kept(); n != 0 {
		t.Fatalf("kept %d segments before any was freed", n)
	}
	firstSegs := map[*byte]bool{}
	for _, b := range first {
		firstSegs[&b.ReadOnlyData()[0]] = true
	}
	first.Free()
	if n, b := p.Kept(); n != keep || b != keep*SegmentSize {
		t.Fatalf("kept %d segments (%d bytes) after 5 were freed, want %d", n, b, keep)
	}
	// A smaller answer of another size takes kept segments.
	second := p.EncodeRecords(records(SegmentSize * 23 / 10))
	if n, _ := p.Kept(); n != keep-3 {
		t.Errorf("kept %d segments while an answer of 2.3 segments holds 3, want %d", n, keep-3)
	}
	reused := false
	for _, b := range second {
		reused = reused || firstSegs[&b.ReadOnlyData()[0]]
	}
	if !reused {
		t.Errorf("the second answer did not reuse the first answer's segments")
	}
	second.Free()
	// Buffers of another size are not kept.
	other := make([]byte, SegmentSize+1)
	p.Put(&other)
	if n, _ := p.Kept(); n != keep {
		t.Errorf("kept %d segments after a buffer of another size came back, want %d", n, keep)
	}
	// A small answer: one buffer of its own size, never pooled.
	small := p.EncodeRecords(records(40 << 10))
	if len(small) != 1 || small.Len() != 4*fieldSize(10<<10-4) {
		t.Fatalf("small answer in %d buffers of %d bytes", len(small), small.Len())
	}
	if n, _ := p.Kept(); n != keep {
		t.Errorf("a small answer took a segment (kept %d, want %d)", n, keep)
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
	if err := kvs.Unmarshal(r.kvs.Materialize()); err != nil {
		return nil, fmt.Errorf("rangewire: decode kvs: %w", err)
	}
	out.Kvs = kvs.Kvs
	return out, nil
}
