package v3rpc

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"
	"unicode/utf8"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	gproto "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// logRequestStats logs upstream's "request stats" line for a unary call: at warn level when it
// took longer than warn (--warning-unary-request-duration), and for every call at debug level.
func logRequestStats(ctx context.Context, lg *slog.Logger, warn time.Duration, start time.Time, method string, req, resp any) {
	took := time.Since(start)
	level := slog.LevelDebug
	if took > warn {
		level = slog.LevelWarn
	}
	if !lg.Enabled(ctx, level) {
		return
	}
	remote := "No remote client info."
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr.String()
	}
	lg.Log(ctx, level, "request stats", "start time", start, "time spent", took, "remote", remote,
		"response type", method, "request size", size(req), "response size", size(resp),
		"request content", loggable(req))
}

// size is a message's encoded size (-1 for what is not a protobuf message, or a nil one: a
// failed call's response).
func size(m any) int {
	if isNil(m) {
		return -1
	}
	if s, ok := m.(interface{ Size() int }); ok { // the generated messages and rangewire's
		return s.Size()
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
	// Passwords never reach a log line.
	case *pb.AuthenticateRequest:
		return fmt.Sprintf("name:%q password:<redacted>", r.Name)
	case *pb.AuthUserAddRequest:
		return fmt.Sprintf("name:%q password:<redacted> no_password:%t", r.Name, r.Options != nil && r.Options.NoPassword)
	case *pb.AuthUserChangePasswordRequest:
		return fmt.Sprintf("name:%q password:<redacted>", r.Name)
	case fmt.Stringer:
		return r.String()
	}
	return ""
}

// clientVersion is the API version a client announced ("unknown" when it did not), or an
// error for one that is not valid UTF-8, as upstream refuses it.
func clientVersion(ctx context.Context) (string, error) {
	ver := "unknown"
	if vs := metadata.ValueFromIncomingContext(ctx, rpctypes.MetadataClientAPIVersionKey); len(vs) > 0 {
		ver = vs[0]
	}
	if !utf8.ValidString(ver) {
		return "", rpctypes.ErrGRPCInvalidClientAPIVersion
	}
	return ver, nil
}

// countStream feeds etcd_server_client_requests_total (unaryInterceptor counts unary calls).
func countStream(s Gate) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ver, err := clientVersion(ss.Context())
		if err != nil {
			return err
		}
		s.CountClientRequest("stream", ver)
		return handler(srv, ss)
	}
}
