package httpapi

import (
	"context"
	"log/slog"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"

	"etcdx/server/etcdserver"
	"etcdx/server/v2http"
)

// What the HTTP side asks of the member, by endpoint, so each handler says what it uses
// (*etcdserver.Server is all of them).

// Health is what /health, /livez and /readyz check, and where they count their answers.
type Health interface {
	Config() etcdserver.Config
	Alarms() []*pb.AlarmMember
	IsLearner() bool
	Leader() uint64
	RequestTimeout() time.Duration
	// Range and V2Do are the reads a health check makes (as the root user: AsRoot).
	Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error)
	V2Do(ctx context.Context, r pb.Request) (etcdserver.V2Response, error)
	AsRoot(ctx context.Context) context.Context
	ObserveHealth(ok bool)
	ObserveHealthCheck(kind, name string, ok bool)
}

// RaftStatus is what /debug/vars shows of raft.
type RaftStatus interface {
	RaftStatus() raft.Status
}

// Member is everything the client listener's HTTP side serves from: Handler takes one.
type Member interface {
	Health
	VersionSource
	RaftStatus
	v2http.Server
	v2http.StatsSource
	Logger() *slog.Logger
}

var _ Member = (*etcdserver.Server)(nil)
