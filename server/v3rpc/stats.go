package v3rpc

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	gproto "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// requestStats logs upstream's "request stats" line for a unary call: at warn level when it took
// longer than warn (--warning-unary-request-duration), and for every call at debug level.
func requestStats(lg *slog.Logger, warn time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		took := time.Since(start)
		level := slog.LevelDebug
		if took > warn {
			level = slog.LevelWarn
		}
		if !lg.Enabled(ctx, level) {
			return resp, err
		}
		remote := "No remote client info."
		if p, ok := peer.FromContext(ctx); ok {
			remote = p.Addr.String()
		}
		lg.Log(ctx, level, "request stats", "start time", start, "time spent", took, "remote", remote,
			"response type", info.FullMethod, "request size", size(req), "response size", size(resp),
			"request content", loggable(req))
		return resp, err
	}
}

// size is a message's encoded size (-1 for what is not a protobuf message, or a nil one: a
// failed call's response).
func size(m any) int {
	if isNil(m) {
		return -1
	}
	if v1, ok := m.(protoadapt.MessageV1); ok {
		return gproto.Size(protoadapt.MessageV2Of(v1))
	}
	return -1
}

func isNil(m any) bool {
	if m == nil {
		return true
	}
	v := reflect.ValueOf(m)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// loggable describes a request without the values it writes.
func loggable(req any) string {
	if isNil(req) {
		return ""
	}
	switch r := req.(type) {
	case *pb.PutRequest:
		return fmt.Sprintf("key:%q value_size:%d lease:%d", r.Key, len(r.Value), r.Lease)
	case *pb.TxnRequest:
		return fmt.Sprintf("compare:%d success:%d failure:%d", len(r.Compare), len(r.Success), len(r.Failure))
	case fmt.Stringer:
		return r.String()
	}
	return ""
}
