package recipes

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	epb "go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
	lpb "go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Services holds the client the recipes run on.
type Services struct {
	c *clientv3.Client
	// mark is added to every request, so the member does not take the certificate its own
	// connection presents for the caller's (v3rpc.GatewayMark).
	mark string
}

// New serves the recipes over conn, a connection to this member's client port; mark is the
// metadata key that says a request comes through the member itself.
func New(conn *grpc.ClientConn, mark string) *Services {
	c := clientv3.NewCtxClient(context.Background())
	c.KV = clientv3.NewKVFromKVClient(pb.NewKVClient(conn), c)
	c.Lease = clientv3.NewLeaseFromLeaseClient(pb.NewLeaseClient(conn), c, 5*time.Second)
	c.Watcher = clientv3.NewWatchFromWatchClient(pb.NewWatchClient(conn), c)
	return &Services{c: c, mark: mark}
}

// Register adds the Lock and Election services to gs.
func (s *Services) Register(gs *grpc.Server) {
	lpb.RegisterLockServer(gs, lockServer{s})
	epb.RegisterElectionServer(gs, electionServer{s})
}

// Close stops the client's keep-alives and watches.
func (s *Services) Close() error { return s.c.Close() }

// asCaller is ctx for the recipe's own requests: the caller's token (gRPC or gateway spelling)
// goes along, and the mark.
func (s *Services) asCaller(ctx context.Context) context.Context {
	out := metadata.Pairs(s.mark, "1")
	in, _ := metadata.FromIncomingContext(ctx)
	for _, k := range []string{rpctypes.TokenFieldNameGRPC, rpctypes.TokenFieldNameSwagger} {
		if v := in.Get(k); len(v) > 0 {
			out.Set(k, v...)
		}
	}
	return metadata.NewOutgoingContext(ctx, out)
}

// session is a recipe's session on lease (0: a new lease, as upstream grants one of 60 s;
// -1: none, for reading an election), left to expire on its own: the recipe's effect outlives
// the call, as upstream's.
func (s *Services) session(ctx context.Context, lease int64) (*concurrency.Session, error) {
	sess, err := concurrency.NewSession(s.c, concurrency.WithLease(clientv3.LeaseID(lease)), concurrency.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	sess.Orphan()
	return sess, nil
}

type lockServer struct{ s *Services }

// Lock waits for and takes the lock name, held on the request's lease (a new one when none).
func (l lockServer) Lock(ctx context.Context, r *lpb.LockRequest) (*lpb.LockResponse, error) {
	ctx = l.s.asCaller(ctx)
	sess, err := l.s.session(ctx, r.Lease)
	if err != nil {
		return nil, err
	}
	m := concurrency.NewMutex(sess, string(r.Name))
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return &lpb.LockResponse{Header: m.Header(), Key: []byte(m.Key())}, nil
}

// Unlock releases a lock by the key Lock answered with.
func (l lockServer) Unlock(ctx context.Context, r *lpb.UnlockRequest) (*lpb.UnlockResponse, error) {
	resp, err := l.s.c.Delete(l.s.asCaller(ctx), string(r.Key))
	if err != nil {
		return nil, err
	}
	return &lpb.UnlockResponse{Header: resp.Header}, nil
}
