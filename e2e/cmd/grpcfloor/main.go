// Command grpcfloor is the floor under a member's CPU per request: a process that takes a
// member's command line, answers /health and /metrics over HTTP and the KV service over gRPC on
// its --listen-client-urls (split by cmux, as a member's client port is), and does nothing else.
// Every KV call gets one canned answer (a Range one key of 256 B, as the bench's reads find), the
// request left undecoded: what it costs per request is what grpc-go's transport, the Go runtime
// and the kernel cost, with no store, raft or interceptor.
//
// The bench runs it in place of a member (`--upstream` or `--ours` naming it); GRPCFLOOR_TRANSPORT
// chooses the gRPC server's options: "default" (grpc-go's, as upstream's etcd leaves most of them)
// or "ours" (the member's, etcdx/server/v3rpc.TransportOptions). Serializable gets touch nothing
// but the transport on a real member too, so their CPU per request on grpcfloor is the least any
// grpc-go server can spend on them on this machine: docs/performance.md compares it with both
// members'.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/soheilhy/cmux"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	"etcdx/server/etcdserver"
	"etcdx/server/v3rpc"
)

func main() {
	addr, err := clientAddr(os.Args[1:])
	if err != nil {
		log.Fatalf("grpcfloor: %v", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("grpcfloor: %v", err)
	}
	log.Fatalf("grpcfloor: %v", serve(l, os.Getenv("GRPCFLOOR_TRANSPORT")))
}

// serve answers on l until it fails, with the gRPC server options transport names.
func serve(l net.Listener, transport string) error {
	opts := []grpc.ServerOption{grpc.ForceServerCodecV2(rawCodec{})}
	switch transport {
	case "", "default":
	case "ours":
		// A member's default request limit (--max-request-bytes) and gRPC's overhead over it.
		opts = append(opts, v3rpc.TransportOptions(etcdserver.DefaultMaxRequestBytes+etcdserver.GRPCOverheadBytes)...)
	default:
		return fmt.Errorf("GRPCFLOOR_TRANSPORT %q: want default or ours", transport)
	}
	gs := grpc.NewServer(opts...)
	gs.RegisterService(kvService(cannedAnswers()), nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"health":"true","reason":""}`)
	})
	mux.HandleFunc("/metrics", func(http.ResponseWriter, *http.Request) {})
	m := cmux.New(l)
	grpcL, httpL := m.Match(cmux.HTTP2()), m.Match(cmux.Any())
	errc := make(chan error, 3)
	go func() { errc <- gs.Serve(grpcL) }()
	go func() { errc <- (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(httpL) }()
	go func() { errc <- m.Serve() }()
	return <-errc
}

// clientAddr is the host:port of the first of --listen-client-urls among a member's flags; the
// rest are a member's business, not the floor's.
func clientAddr(args []string) (string, error) {
	for i, a := range args {
		var v string
		switch {
		case strings.HasPrefix(a, "--listen-client-urls="):
			v = strings.TrimPrefix(a, "--listen-client-urls=")
		case a == "--listen-client-urls" && i+1 < len(args):
			v = args[i+1]
		default:
			continue
		}
		u, err := url.Parse(strings.Split(v, ",")[0])
		if err != nil {
			return "", fmt.Errorf("--listen-client-urls %q: %w", v, err)
		}
		return u.Host, nil
	}
	return "", fmt.Errorf("no --listen-client-urls among %q", args)
}

// answers are the encoded responses, one per KV method.
type answers map[string][]byte

func cannedAnswers() answers {
	h := &pb.ResponseHeader{ClusterId: 0x1c2d3e4f5a6b7c8d, MemberId: 0x8e9f0a1b2c3d4e5f, Revision: 40001, RaftTerm: 2}
	kv := &mvccpb.KeyValue{Key: []byte("offered/00000001"), Value: []byte(strings.Repeat("v", 256)),
		CreateRevision: 2, ModRevision: 20002, Version: 2}
	enc := func(m interface{ Marshal() ([]byte, error) }) []byte {
		b, err := m.Marshal()
		if err != nil {
			log.Fatalf("grpcfloor: encoding an answer: %v", err)
		}
		return b
	}
	return answers{
		"Range":       enc(&pb.RangeResponse{Header: h, Kvs: []*mvccpb.KeyValue{kv}, Count: 1}),
		"Put":         enc(&pb.PutResponse{Header: h}),
		"DeleteRange": enc(&pb.DeleteRangeResponse{Header: h}),
		"Txn":         enc(&pb.TxnResponse{Header: h, Succeeded: true, Responses: []*pb.ResponseOp{{Response: &pb.ResponseOp_ResponsePut{ResponsePut: &pb.PutResponse{Header: h}}}}}),
		"Compact":     enc(&pb.CompactionResponse{Header: h}),
	}
}

// kvService is etcdserverpb.KV with every method answering its canned bytes.
func kvService(a answers) *grpc.ServiceDesc {
	sd := &grpc.ServiceDesc{ServiceName: "etcdserverpb.KV", HandlerType: (*any)(nil), Metadata: "rpc.proto"}
	for name, b := range a {
		sd.Methods = append(sd.Methods, grpc.MethodDesc{MethodName: name,
			Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				if err := dec(nil); err != nil {
					return nil, err
				}
				return b, nil
			}})
	}
	return sd
}

// rawCodec leaves requests undecoded and sends the handlers' bytes as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("grpcfloor sends bytes, not %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(mem.BufferSlice, any) error { return nil }

func (rawCodec) Name() string { return "proto" }
