package v3rpc

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"etcdx/server/etcdserver"
	"etcdx/server/failpoint"
)

// Options tune the gRPC server.
type Options struct {
	// Metrics, shared by every client listener of a member, count RPCs by method and code.
	Metrics *CallMetrics
	// Traffic counts client bytes (NewTrafficCounter).
	Traffic *TrafficCounter
	// WatchLoop times the watch send loop (NewWatchLoopMetrics; level 3.7 on, nil below).
	WatchLoop *WatchLoopMetrics
	// WatchProgressNotifyInterval is how often watchers that asked for progress hear of it.
	WatchProgressNotifyInterval time.Duration
	ExtraServerOptions          []grpc.ServerOption
	// StopGRPCServiceOnDefrag reports the gRPC health service NOT_SERVING during a defrag.
	StopGRPCServiceOnDefrag bool
	// WarningUnaryRequestDuration: unary calls that take longer are logged (0: upstream's 300 ms).
	WarningUnaryRequestDuration time.Duration
	// Register adds services built elsewhere (the lock and election recipes), before the
	// metrics are initialized.
	Register func(*grpc.Server)
}

// The flow-control windows clients send into are fixed, where gRPC would otherwise size them by
// pinging every connection whenever a request arrives and no ping is outstanding (its
// bandwidth-delay estimate): at a steady 6,000 puts/s those pings and their answers were a quarter
// of the server's socket reads and a sixth of its writes (strace of the bench's open-loop put),
// for windows that small requests never fill. A stream's window holds the largest request
// (--max-request-bytes), so a big put is not held to 64 KiB windows while an estimate grows; the
// connection's is as large as gRPC's estimate may grow.
const connWindow = 16 << 20

// streamWindow is the window of one stream for requests of up to maxRequest bytes.
func streamWindow(maxRequest int) int32 {
	return int32(min(connWindow, max(64<<10, maxRequest)))
}

// TransportOptions are how a member's gRPC server runs its connections (keepalive, request
// goroutines, write buffers, flow-control windows) for requests of up to maxRequest bytes; the
// bench's transport floor (e2e/cmd/grpcfloor) serves with the same.
func TransportOptions(maxRequest int) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: false}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Hour, Timeout: 20 * time.Second}),
		// Requests run on reused goroutines whose stacks have already grown: a new goroutine per
		// request spent an eighth of a small request's CPU time growing its stack. When every
		// worker is busy gRPC starts a goroutine as before.
		grpc.NumStreamWorkers(uint32(16 * runtime.GOMAXPROCS(0))),
		// A large answer goes out in writes of up to 256 KiB instead of gRPC's 32 KiB (an eighth
		// of the write calls for a 5 MiB page of a list); gRPC takes the buffer from a pool for
		// each write and gives it back after it, so an idle connection holds none.
		grpc.WriteBufferSize(256 << 10),
		grpc.InitialWindowSize(streamWindow(maxRequest)),
		grpc.InitialConnWindowSize(connWindow),
	}
}

// NewServer returns a gRPC server with every v3 service registered for s.
func NewServer(s Member, o Options) *grpc.Server {
	cfg := s.Config()
	maxRecv := int(cfg.MaxRequestBytes) + etcdserver.GRPCOverheadBytes
	opts := append(TransportOptions(maxRecv),
		grpc.MaxRecvMsgSize(maxRecv),
		grpc.MaxSendMsgSize(math.MaxInt32),
		grpc.MaxConcurrentStreams(math.MaxUint32),
		grpc.ForceServerCodecV2(codec{traffic: o.Traffic}))
	opts = append(opts, o.ExtraServerOptions...)
	if o.Metrics != nil {
		opts = append(opts, grpc.ChainUnaryInterceptor(o.Metrics.UnaryServerInterceptor()),
			grpc.ChainStreamInterceptor(o.Metrics.StreamServerInterceptor()))
	}
	lw := &leaderWatch{streams: map[*leaderCtx]struct{}{}}
	go watchLeader(s, lw)
	warn := o.WarningUnaryRequestDuration
	if warn == 0 {
		warn = 300 * time.Millisecond
	}
	opts = append(opts, grpc.ChainUnaryInterceptor(unaryInterceptor(s, cfg.Logger, warn)),
		grpc.ChainStreamInterceptor(countStream(s), learnerStreamGate(s), leaderStreamGate(s, lw), authStream(s)))
	gs := grpc.NewServer(opts...)
	h := header{s: s}
	gs.RegisterService(kvService(s.Level()), &kvServer{s: s, hdr: h})
	pb.RegisterWatchServer(gs, &watchServer{s: s, hdr: h, progressInterval: o.WatchProgressNotifyInterval,
		maxRequestBytes: int(cfg.MaxRequestBytes), loop: o.WatchLoop})
	pb.RegisterLeaseServer(gs, &leaseServer{s: s, hdr: h})
	gh := newGRPCHealth(cfg.Logger, o.StopGRPCServiceOnDefrag)
	pb.RegisterMaintenanceServer(gs, &maintenanceServer{s: s, log: cfg.Logger, hdr: h, health: gh})
	pb.RegisterClusterServer(gs, &clusterServer{s: s, hdr: h})
	pb.RegisterAuthServer(gs, &authServer{s: s, hdr: h})
	healthpb.RegisterHealthServer(gs, gh.hs)
	if o.Register != nil {
		o.Register(gs)
	}
	if o.Metrics != nil {
		o.Metrics.Initialize(gs) // every method shows up at zero, as dashboards expect
	}
	return gs
}

// A learner only replicates: it serves local reads, status and membership, as upstream.
func learnerAllows(req any) bool {
	switch r := req.(type) {
	case *pb.RangeRequest:
		return r.Serializable
	case *pb.StatusRequest, *pb.MemberListRequest, *pb.MemberPromoteRequest, *pb.MemberAddRequest,
		*pb.MemberRemoveRequest, *pb.MemberUpdateRequest:
		return true
	}
	return false
}

// unaryInterceptor is every unary call's handling around its handler, in one layer (each layer
// of a gRPC chain costs every call a closure and a call): the client-request count, then, timed
// for the request-stats line, the learner, leader and caller checks.
func unaryInterceptor(s Gate, lg *slog.Logger, warn time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ver, err := clientVersion(ctx)
		if err != nil {
			return nil, err
		}
		s.CountClientRequest("unary", ver)
		start := time.Now()
		resp, err := admitUnary(ctx, s, req, info.FullMethod, h)
		logRequestStats(ctx, lg, warn, start, info.FullMethod, req, resp)
		return resp, err
	}
}

// admitUnary runs h if this member may serve the call: a learner serves only what learnerAllows,
// a call that requires a leader needs one (upstream's require-leader metadata), and the caller
// must pass the method's rule.
func admitUnary(ctx context.Context, s Gate, req any, method string, h grpc.UnaryHandler) (any, error) {
	failpoint.At(failpoint.AfterIsMemberExist)
	if s.IsLearner() && !learnerAllows(req) {
		return nil, rpctypes.ErrGRPCNotSupportedForLearner
	}
	if s.Leader() == 0 && requiresLeader(ctx) {
		return nil, rpctypes.ErrGRPCNoLeader
	}
	ctx, err := withCaller(ctx, s, method, req)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func learnerStreamGate(s Gate) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		failpoint.At(failpoint.AfterIsMemberExist)
		if s.IsLearner() && info.FullMethod != "/etcdserverpb.Maintenance/Snapshot" {
			return rpctypes.ErrGRPCNotSupportedForLearner
		}
		return h(srv, ss)
	}
}
