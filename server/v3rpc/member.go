package v3rpc

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/backend"
	"etcdx/server/etcdserver"
	"etcdx/server/membership"
	"etcdx/server/mvcc"
	"etcdx/server/rangewire"
	"etcdx/server/version"
)

// What each service asks of the member it serves, one interface per service: the services
// are written against these, not against the whole member (*etcdserver.Server is all of
// them), so each says what it uses.

// Identity is what every response header names: the cluster, the member, its term, and the
// store whose revision answers carry.
type Identity interface {
	ClusterID() uint64
	ID() uint64
	Term() uint64
	KV() *mvcc.Store
}

// Gate is what the interceptors ask before a request reaches its service: the member's role,
// its leader, its level, and the request counts.
type Gate interface {
	Config() etcdserver.Config
	Level() version.Level
	IsLearner() bool
	Leader() uint64
	Stopping() <-chan struct{}
	CountClientRequest(kind, apiVersion string)
	Callers
}

// Callers is who may call: the auth checks made before a method runs.
type Callers interface {
	AuthEnabled() bool
	RequireCaller(ctx context.Context) error
	CheckAdmin(ctx context.Context) error
}

// KV serves the KV service.
type KV interface {
	Config() etcdserver.Config
	RangeEncoded(ctx context.Context, r *pb.RangeRequest) (*rangewire.Response, error)
	RangeStream(ctx context.Context, r *pb.RangeRequest, send func(*rangewire.Response) error) error
	Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error)
	DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error)
	Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error)
	Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error)
}

// Watches serves the Watch service.
type Watches interface {
	KV() *mvcc.Store
	WatchPermitted(ctx context.Context, key, rangeEnd []byte) error
	Draining() <-chan struct{}
	Stopping() <-chan struct{}
}

// Leases serves the Lease service.
type Leases interface {
	LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error)
	LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error)
	LeaseRenew(ctx context.Context, id int64) (int64, error)
	LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error)
	LeaseLeases(ctx context.Context) (*pb.LeaseLeasesResponse, error)
	Draining() <-chan struct{}
}

// Maintenance serves the Maintenance service.
type Maintenance interface {
	Identity
	Config() etcdserver.Config
	Level() version.Level
	Version() string
	StorageVersion() version.Level
	IsLearner() bool
	Leader() uint64
	AppliedIndex() uint64
	CommittedIndex() uint64
	Backend() *backend.Backend
	Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error)
	Alarms() []*pb.AlarmMember
	Downgrade(ctx context.Context, r *pb.DowngradeRequest) (*pb.DowngradeResponse, error)
	DowngradeInfo() version.DowngradeInfo
	MoveLeader(ctx context.Context, target uint64) error
	LinearizableReadNotify(ctx context.Context) error
	Members() []membership.Member
}

// Cluster serves the Cluster service.
type Cluster interface {
	Members() []membership.Member
	AddMember(ctx context.Context, peerURLs []string, learner bool) (*membership.Member, []membership.Member, error)
	RemoveMember(ctx context.Context, id uint64) ([]membership.Member, error)
	UpdateMember(ctx context.Context, id uint64, peerURLs []string) ([]membership.Member, error)
	PromoteMember(ctx context.Context, id uint64) ([]membership.Member, error)
	LinearizableReadNotify(ctx context.Context) error
}

// Auth serves the Auth service.
type Auth interface {
	AuthEnable(ctx context.Context, r *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error)
	AuthDisable(ctx context.Context, r *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error)
	AuthStatus(ctx context.Context, r *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error)
	Authenticate(ctx context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error)
	UserAdd(ctx context.Context, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error)
	UserDelete(ctx context.Context, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error)
	UserChangePassword(ctx context.Context, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error)
	UserGrantRole(ctx context.Context, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error)
	UserGet(ctx context.Context, r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error)
	UserList(ctx context.Context, r *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error)
	UserRevokeRole(ctx context.Context, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error)
	RoleAdd(ctx context.Context, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error)
	RoleGrantPermission(ctx context.Context, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error)
	RoleGet(ctx context.Context, r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error)
	RoleList(ctx context.Context, r *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error)
	RoleRevokePermission(ctx context.Context, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error)
	RoleDelete(ctx context.Context, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error)
}

// Member is everything the v3 API serves from: NewServer takes one.
type Member interface {
	Gate
	KV
	Watches
	Leases
	Maintenance
	Cluster
	Auth
}

var _ Member = (*etcdserver.Server)(nil)
