package v3rpc

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"etcdx/pkg/rangestream"
	"etcdx/server/rangewire"
	"etcdx/server/version"
)

// kvService describes the KV service a member at level serves: upstream 3.6's five unary
// methods and, from 3.7, the RangeStream server stream. The generated description of the API
// types this workspace builds with (go.etcd.io/etcd/api/v3 3.6) predates RangeStream, so the
// service is described here; below 3.7 RangeStream is an unknown method, as on upstream 3.6.
func kvService(level version.Level) *grpc.ServiceDesc {
	d := &grpc.ServiceDesc{
		ServiceName: rangestream.Service,
		HandlerType: (*kvHandlers)(nil),
		Methods: []grpc.MethodDesc{
			kvUnary("Range", (*kvServer).Range),
			kvUnary("Put", (*kvServer).Put),
			kvUnary("DeleteRange", (*kvServer).DeleteRange),
			kvUnary("Txn", (*kvServer).Txn),
			kvUnary("Compact", (*kvServer).Compact),
		},
		Metadata: "rpc.proto",
	}
	if version.RangeStream.Built(level) {
		d.Streams = append(d.Streams, grpc.StreamDesc{StreamName: rangestream.Method, ServerStreams: true,
			Handler: func(srv any, ss grpc.ServerStream) error {
				r := new(pb.RangeRequest)
				if err := ss.RecvMsg(r); err != nil {
					return err
				}
				return srv.(*kvServer).RangeStream(r, ss)
			}})
	}
	return d
}

// kvHandlers is what the service's handlers call: pb.KVServer, but Range answers with its
// key-values already encoded (rangewire).
type kvHandlers interface {
	Range(context.Context, *pb.RangeRequest) (*rangewire.Response, error)
	Put(context.Context, *pb.PutRequest) (*pb.PutResponse, error)
	DeleteRange(context.Context, *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error)
	Txn(context.Context, *pb.TxnRequest) (*pb.TxnResponse, error)
	Compact(context.Context, *pb.CompactionRequest) (*pb.CompactionResponse, error)
}

var _ kvHandlers = (*kvServer)(nil)

// kvUnary is one unary KV method: decode the request, then call through the interceptors.
func kvUnary[Req, Resp any](name string, call func(*kvServer, context.Context, *Req) (Resp, error)) grpc.MethodDesc {
	info := &grpc.UnaryServerInfo{FullMethod: "/" + rangestream.Service + "/" + name}
	return grpc.MethodDesc{MethodName: name, Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		in := new(Req)
		if err := dec(in); err != nil {
			return nil, err
		}
		k := srv.(*kvServer)
		if ic == nil {
			return call(k, ctx, in)
		}
		info := *info
		info.Server = srv
		return ic(ctx, in, &info, func(ctx context.Context, req any) (any, error) { return call(k, ctx, req.(*Req)) })
	}}
}

// RangeStream answers a range in chunks (etcd 3.7). It refuses what upstream refuses: the checks
// of Range, then any order but by key ascending and the revision filters, which need the whole
// result before the first key can be sent.
func (k *kvServer) RangeStream(r *pb.RangeRequest, ss grpc.ServerStream) error {
	if err := checkRange(r); err != nil {
		return err
	}
	if r.SortOrder != pb.RangeRequest_NONE && (r.SortTarget != pb.RangeRequest_KEY || r.SortOrder != pb.RangeRequest_ASCEND) {
		return status.Error(codes.Unimplemented, "RangeStream does not support custom sort orders")
	}
	if r.MinModRevision != 0 || r.MaxModRevision != 0 || r.MinCreateRevision != 0 || r.MaxCreateRevision != 0 {
		return status.Error(codes.Unimplemented, "RangeStream does not support revision filters")
	}
	err := k.s.RangeStream(ss.Context(), r, func(resp *rangewire.Response) error {
		k.hdr.fill(resp.Header) // the last chunk's; its revision is the stream's, already set
		return ss.SendMsg(rangewire.Chunk{Response: resp})
	})
	if err != nil {
		return togRPCError(err)
	}
	return nil
}
