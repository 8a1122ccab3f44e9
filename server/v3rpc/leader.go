package v3rpc

import (
	"context"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Clients that put "hasleader" in their metadata (clientv3.WithRequireLeader; kube-apiserver opens
// every watch so) want an answer only from a member that has a leader, as upstream gives it: a
// request or stream opened while there is none fails at once with "etcdserver: no leader", and a
// stream already open is cancelled with it once the member has had no leader for
// noLeaderTimeouts election timeouts, so the client moves to a member that has one.

// noLeaderTimeouts is upstream's maxNoLeaderCnt.
const noLeaderTimeouts = 3

func requiresLeader(ctx context.Context) bool {
	return incoming(ctx, rpctypes.MetadataRequireLeaderKey) == rpctypes.MetadataHasLeader
}

// incoming is the first value of a request's metadata key ("" when absent). It reads the one
// key instead of copying the whole metadata, which metadata.FromIncomingContext does on every
// call (a tenth of a small request's CPU time when three interceptors did it).
func incoming(ctx context.Context, key string) string {
	if vs := metadata.ValueFromIncomingContext(ctx, key); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// leaderCtx is a stream's context that can be cancelled with a reason its Err reports.
type leaderCtx struct {
	context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	reason error
}

func (c *leaderCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason != nil {
		return c.reason
	}
	return c.Context.Err()
}

func (c *leaderCtx) cancelWith(reason error) {
	c.mu.Lock()
	c.reason = reason
	c.mu.Unlock()
	c.cancel()
}

type leaderStream struct {
	grpc.ServerStream
	ctx *leaderCtx
}

func (s leaderStream) Context() context.Context { return s.ctx }

// leaderWatch holds the open streams that require a leader.
type leaderWatch struct {
	mu      sync.Mutex
	streams map[*leaderCtx]struct{}
}

func (w *leaderWatch) add(c *leaderCtx) {
	w.mu.Lock()
	w.streams[c] = struct{}{}
	w.mu.Unlock()
}

func (w *leaderWatch) remove(c *leaderCtx) {
	w.mu.Lock()
	delete(w.streams, c)
	w.mu.Unlock()
}

func (w *leaderWatch) cancelAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.streams {
		c.cancelWith(rpctypes.ErrGRPCNoLeader)
	}
	clear(w.streams)
}

// watchLeader cancels the registered streams when s has had no leader for noLeaderTimeouts
// election timeouts in a row, until s stops.
func watchLeader(s Gate, w *leaderWatch) {
	cfg := s.Config()
	election := time.Duration(cfg.TickMs) * time.Duration(cfg.ElectionTicks) * time.Millisecond
	t := time.NewTicker(election)
	defer t.Stop()
	without := 0
	for {
		select {
		case <-s.Stopping():
			return
		case <-t.C:
		}
		if s.Leader() != 0 {
			without = 0
			continue
		}
		if without++; without >= noLeaderTimeouts {
			w.cancelAll()
		}
	}
}

func leaderStreamGate(s Gate, w *leaderWatch) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if !requiresLeader(ss.Context()) {
			return h(srv, ss)
		}
		if s.Leader() == 0 {
			return rpctypes.ErrGRPCNoLeader
		}
		ctx, cancel := context.WithCancel(ss.Context())
		lc := &leaderCtx{Context: ctx, cancel: cancel}
		w.add(lc)
		defer func() {
			w.remove(lc)
			cancel()
		}()
		return h(srv, leaderStream{ServerStream: ss, ctx: lc})
	}
}
