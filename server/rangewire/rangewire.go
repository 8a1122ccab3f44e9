package rangewire

import (
	"fmt"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

const (
	kvsField   = 2 // RangeResponse.kvs
	chunkField = 1 // RangeStreamResponse.range_response
)

// Response is a RangeResponse whose kvs are encoded. Its buffers are handed on by Wire, once; an
// answer that is not sent may be dropped (its buffers are then garbage, not returned to the pool).
type Response struct {
	Header *pb.ResponseHeader
	More   bool
	Count  int64
	// Kvs is how many key-values it holds; LastKey is the last one's key.
	Kvs     int
	LastKey []byte
	kvs     mem.BufferSlice // nil when there are none
}

// NewResponse makes a Response of kvs, the encoded kvs field (nil for none) of n key-values.
func NewResponse(kvs mem.BufferSlice, n int) *Response { return &Response{kvs: kvs, Kvs: n} }

// KVsSize is the encoded size of the key-values.
func (r *Response) KVsSize() int { return r.kvs.Len() }

// Size is the encoded size of the RangeResponse.
func (r *Response) Size() int {
	return r.head().Size() + r.KVsSize() + r.tail().Size()
}

func (r *Response) head() *pb.RangeResponse { return &pb.RangeResponse{Header: r.Header} }
func (r *Response) tail() *pb.RangeResponse { return &pb.RangeResponse{More: r.More, Count: r.Count} }

// Wire is the encoded RangeResponse; it hands the kvs buffers on to the caller (gRPC frees each
// once written), so it may be called once.
func (r *Response) Wire() (mem.BufferSlice, error) { return r.wire(nil) }

// wire encodes r after prefix.
func (r *Response) wire(prefix []byte) (mem.BufferSlice, error) {
	head, err := r.head().Marshal()
	if err != nil {
		return nil, fmt.Errorf("rangewire: marshal header: %w", err)
	}
	tail, err := r.tail().Marshal()
	if err != nil {
		return nil, fmt.Errorf("rangewire: marshal more and count: %w", err)
	}
	out := mem.BufferSlice{mem.SliceBuffer(append(prefix, head...))}
	out = append(out, r.kvs...)
	r.kvs = nil
	if len(tail) > 0 {
		out = append(out, mem.SliceBuffer(tail))
	}
	return out, nil
}

// Chunk is a Response sent as one RangeStreamResponse (etcd 3.7's RangeStream).
type Chunk struct{ *Response }

// Size is the encoded size of the RangeStreamResponse.
func (c Chunk) Size() int {
	n := c.Response.Size()
	return protowire.SizeTag(chunkField) + protowire.SizeBytes(n)
}

// Wire is the encoded RangeStreamResponse; as Response.Wire, once.
func (c Chunk) Wire() (mem.BufferSlice, error) {
	prefix := protowire.AppendTag(nil, chunkField, protowire.BytesType)
	return c.wire(protowire.AppendVarint(prefix, uint64(c.Response.Size())))
}

// EncodeRecords encodes stored KeyValue records as the kvs field: a large answer in segments
// from p.
func (p *Pool) EncodeRecords(recs [][]byte) mem.BufferSlice {
	if len(recs) == 0 {
		return nil
	}
	n := 0
	for _, rec := range recs {
		n += fieldSize(len(rec))
	}
	w := p.newWriter(n)
	var headBuf [16]byte // a tag and a length
	for _, rec := range recs {
		w.write(appendFieldHead(headBuf[:0], len(rec)))
		w.write(rec)
	}
	return w.done()
}

// EncodeKVs encodes key-values as the kvs field, as EncodeRecords: the answers that were sorted,
// filtered or stripped of values, which are not the stored records. Each is marshalled where it
// goes when it fits there, else once more through a scratch buffer.
func (p *Pool) EncodeKVs(kvs []*mvccpb.KeyValue) (mem.BufferSlice, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	n := 0
	for _, kv := range kvs {
		n += fieldSize(kv.Size())
	}
	w := p.newWriter(n)
	var headBuf [16]byte // a tag and a length
	var scratch []byte
	for _, kv := range kvs {
		size := kv.Size()
		w.write(appendFieldHead(headBuf[:0], size))
		dst := w.room(size)
		spans := dst == nil
		if spans {
			scratch = slices.Grow(scratch[:0], size)[:size]
			dst = scratch
		}
		if _, err := kv.MarshalToSizedBuffer(dst); err != nil {
			w.abandon()
			return nil, fmt.Errorf("rangewire: marshal %q: %w", kv.Key, err)
		}
		if spans {
			w.write(scratch)
		}
	}
	return w.done(), nil
}

// appendFieldHead appends the tag and length of one kvs entry of n bytes.
func appendFieldHead(b []byte, n int) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, kvsField, protowire.BytesType), uint64(n))
}

// fieldSize is the encoded size of one kvs entry of n bytes.
func fieldSize(n int) int { return protowire.SizeTag(kvsField) + protowire.SizeBytes(n) }
