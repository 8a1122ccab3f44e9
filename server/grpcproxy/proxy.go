// Package grpcproxy is `etcd grpc-proxy start`: a gRPC endpoint in front of a cluster that
// forwards every call (the KV, Watch, Lease, Cluster, Maintenance, Auth, Lock and Election
// services) to the cluster through one client connection, message by message, with its
// metadata (auth tokens) and the cluster's status codes, headers and trailers. Upstream's proxy
// also caches ranges and coalesces watches; this one forwards everything, so clients get the
// cluster's own answers. Beside gRPC, the same port serves upstream's proxy HTTP endpoints.
package grpcproxy

import (
	"context"
	"errors"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// frame is one gRPC message, undecoded.
type frame struct{ data []byte }

// rawCodec passes messages through as bytes. It is named "proto" so both sides see the
// content type a protobuf call has.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, errors.New("grpcproxy: not a frame")
	}
	return f.data, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return errors.New("grpcproxy: not a frame")
	}
	f.data = append(f.data[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// ServerOptions are what the proxy's gRPC server needs to forward every method it is called
// with; append limits and keepalive options to them.
func ServerOptions(conn *grpc.ClientConn) []grpc.ServerOption {
	f := &forwarder{conn: conn}
	return []grpc.ServerOption{grpc.UnknownServiceHandler(f.handle), grpc.ForceServerCodec(rawCodec{})}
}

type forwarder struct{ conn *grpc.ClientConn }

// streamDesc takes any call shape: a unary call is a stream of one message each way.
var streamDesc = &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

// handle forwards one call: the client's messages to the cluster as they come, the cluster's
// back, until either side ends; the cluster's ending (status, trailer) is the client's.
func (f *forwarder) handle(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return errors.New("grpcproxy: no method")
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	md, _ := metadata.FromIncomingContext(ss.Context())
	out := metadata.MD{}
	for k, v := range md {
		// the transport's own headers are set again by the outgoing connection
		if strings.HasPrefix(k, ":") || k == "content-type" || k == "user-agent" || k == "te" {
			continue
		}
		out[k] = v
	}
	cs, err := f.conn.NewStream(metadata.NewOutgoingContext(ctx, out), streamDesc, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	upErr := make(chan error, 1)
	go func() {
		for {
			var m frame
			if err := ss.RecvMsg(&m); err != nil {
				if errors.Is(err, io.EOF) {
					upErr <- cs.CloseSend()
				} else {
					upErr <- err
					cancel() // the client went away: so does the call
				}
				return
			}
			if err := cs.SendMsg(&m); err != nil {
				upErr <- nil // the cluster ended the call: its status comes from RecvMsg
				return
			}
		}
	}()
	headerSent := false
	for {
		var m frame
		err := cs.RecvMsg(&m)
		if !headerSent {
			if h, herr := cs.Header(); herr == nil && len(h) > 0 {
				ss.SendHeader(h)
			}
			headerSent = true
		}
		if err != nil {
			ss.SetTrailer(cs.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(&m); err != nil {
			return err
		}
	}
}
