package v3rpc

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// gogoMessage is what the generated code of go.etcd.io/etcd/api/v3 gives every message.
type gogoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// codec is the server's wire codec ("proto", as gRPC's own): the API's messages encode and
// decode through their generated methods directly. gRPC's codec goes through the protobuf v2
// adapter and marshals a large response into a pooled buffer of the next size up (1 MiB for a
// 300 KiB range response), which held resident memory at nearly twice upstream's under large
// ranges: a large message gets a buffer of its exact size, garbage once sent, and only a small
// one a pooled buffer. Other messages use gRPC's codec. traffic,
// when set, counts the bytes of every message.
type codec struct{ traffic *TrafficCounter }

var protoCodec = encoding.GetCodecV2(proto.Name)

func (codec) Name() string { return proto.Name }

// wireMessage is a message already in its encoding (rangewire's range answers), handed on as it is.
type wireMessage interface {
	Wire() (mem.BufferSlice, error)
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if w, ok := v.(wireMessage); ok {
		out, err := w.Wire()
		if err == nil {
			c.traffic.countSent(out.Len())
		}
		return out, err
	}
	m, ok := v.(gogoMessage)
	if !ok {
		out, err := protoCodec.Marshal(v)
		if err == nil {
			c.traffic.countSent(out.Len())
		}
		return out, err
	}
	size := m.Size()
	if size <= pooledMarshalMax && !mem.IsBelowBufferPoolingThreshold(size) {
		// gRPC frees what Marshal returns once it is written: the buffer of a message of a few
		// KiB (a watch event of a Kubernetes object) goes back to the pool for the next one
		// instead of to the collector. The smallest are cheaper allocated at their size.
		pool := mem.DefaultBufferPool()
		bp := pool.Get(size)
		n, err := m.MarshalToSizedBuffer(*bp)
		if err == nil && n == size {
			c.traffic.countSent(n)
			return mem.BufferSlice{mem.NewBuffer(bp, pool)}, nil
		}
		pool.Put(bp)
		if err != nil {
			return nil, fmt.Errorf("marshal %T: %w", v, err)
		}
	}
	buf := make([]byte, size)
	n, err := m.MarshalToSizedBuffer(buf)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", v, err)
	}
	c.traffic.countSent(n)
	return mem.BufferSlice{mem.SliceBuffer(buf[len(buf)-n:])}, nil
}

// pooledMarshalMax is the largest message marshalled into a pooled buffer. gRPC's pool hands out
// buffers of a few sizes (the next one up); past this a message gets one of its exact size, so a
// large range answer never holds a buffer near twice its size.
const pooledMarshalMax = 32 << 10

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	c.traffic.countReceived(data.Len())
	m, ok := v.(gogoMessage)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	// The generated Unmarshal copies every bytes and string field, so the pooled buffer can go
	// back at once.
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	if err := m.Unmarshal(buf.ReadOnlyData()); err != nil {
		return fmt.Errorf("unmarshal %T: %w", v, err)
	}
	return nil
}
