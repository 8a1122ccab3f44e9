// Package rangestream is etcd 3.7's KV.RangeStream RPC over the API types this workspace builds
// with. go.etcd.io/etcd/api/v3 3.6 (gogo-generated, as the rest of the workspace) predates the
// RPC, and its 3.7 release moved to protoc-gen-go; the workspace keeps one version of the module,
// so the one new message is written here. Its wire format is upstream's: RangeStreamResponse has
// a single field, range_response = 1, holding a RangeResponse.
//
// The server side registers the method (etcdx/server/v3rpc); Open and Collect are the client
// side, for etcdctl and the tests.
package rangestream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// The method's names, as upstream's generated code has them.
const (
	Service    = "etcdserverpb.KV"
	Method     = "RangeStream"
	FullMethod = "/" + Service + "/" + Method
)

// Response is upstream's RangeStreamResponse: one chunk of a range.
type Response struct {
	RangeResponse *pb.RangeResponse
}

const rangeResponseField = 1

// Size is the encoded size.
func (m *Response) Size() int {
	if m.RangeResponse == nil {
		return 0
	}
	n := m.RangeResponse.Size()
	return protowire.SizeTag(rangeResponseField) + protowire.SizeBytes(n)
}

// MarshalToSizedBuffer encodes m at the end of b (len(b) == m.Size()), as gogo's generated
// methods do, and returns how many bytes it wrote.
func (m *Response) MarshalToSizedBuffer(b []byte) (int, error) {
	if m.RangeResponse == nil {
		return 0, nil
	}
	n, err := m.RangeResponse.MarshalToSizedBuffer(b)
	if err != nil {
		return 0, err
	}
	head := protowire.AppendVarint(protowire.AppendTag(nil, rangeResponseField, protowire.BytesType), uint64(n))
	start := len(b) - n - len(head)
	if start < 0 {
		return 0, fmt.Errorf("rangestream: buffer of %d bytes is short of %d", len(b), n+len(head))
	}
	copy(b[start:], head)
	return len(b) - start, nil
}

// Marshal encodes m.
func (m *Response) Marshal() ([]byte, error) {
	b := make([]byte, m.Size())
	n, err := m.MarshalToSizedBuffer(b)
	return b[len(b)-n:], err
}

// Unmarshal decodes b into m. A repeated range_response merges, as protobuf merges a message
// field that appears twice; fields it does not know are skipped.
func (m *Response) Unmarshal(b []byte) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("rangestream: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == rangeResponseField && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("rangestream: range_response: %w", protowire.ParseError(n))
			}
			if m.RangeResponse == nil {
				m.RangeResponse = &pb.RangeResponse{}
			}
			if err := m.RangeResponse.Unmarshal(v); err != nil {
				return fmt.Errorf("rangestream: range_response: %w", err)
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("rangestream: field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}

// gogoMessage is what the API's generated messages and Response have in common.
type gogoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// codec encodes the request and decodes the chunks through their own methods.
type codec struct{}

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(gogoMessage)
	if !ok {
		return nil, fmt.Errorf("rangestream: cannot encode %T", v)
	}
	b := make([]byte, m.Size())
	n, err := m.MarshalToSizedBuffer(b)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b[len(b)-n:])}, nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(gogoMessage)
	if !ok {
		return fmt.Errorf("rangestream: cannot decode into %T", v)
	}
	return m.Unmarshal(data.Materialize())
}

var _ encoding.CodecV2 = codec{}

// Stream is one RangeStream call from a client.
type Stream struct{ cs grpc.ClientStream }

// Open starts a RangeStream call for r on cc (a client's connection: clientv3's
// ActiveConnection, whose interceptors add its credentials). Chunks may be as large as clientv3
// lets a response be (its default receive limit, math.MaxInt32), unless opts say otherwise.
func Open(ctx context.Context, cc grpc.ClientConnInterface, r *pb.RangeRequest, opts ...grpc.CallOption) (*Stream, error) {
	desc := &grpc.StreamDesc{StreamName: Method, ServerStreams: true}
	opts = append([]grpc.CallOption{grpc.MaxCallRecvMsgSize(math.MaxInt32)}, opts...)
	cs, err := cc.NewStream(ctx, desc, FullMethod, append(opts, grpc.ForceCodecV2(codec{}))...)
	if err != nil {
		return nil, err
	}
	if err := cs.SendMsg(r); err != nil {
		return nil, err
	}
	if err := cs.CloseSend(); err != nil {
		return nil, err
	}
	return &Stream{cs: cs}, nil
}

// Recv returns the next chunk, or io.EOF after the last.
func (s *Stream) Recv() (*pb.RangeResponse, error) {
	var m Response
	if err := s.cs.RecvMsg(&m); err != nil {
		return nil, err
	}
	if m.RangeResponse == nil {
		return &pb.RangeResponse{}, nil
	}
	return m.RangeResponse, nil
}

// Collect reads the stream to its end and merges the chunks into the RangeResponse that Range
// answers for the same request (as upstream's client merges them): the keys in order, and the
// header, More and Count that only the last chunk carries.
func Collect(s *Stream) (*pb.RangeResponse, error) {
	out := &pb.RangeResponse{}
	for {
		r, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out.Kvs = append(out.Kvs, r.Kvs...)
		if r.Header != nil {
			out.Header = r.Header
		}
		out.More = out.More || r.More
		if r.Count != 0 {
			out.Count = r.Count
		}
	}
}
