package v3rpc

import (
	"context"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"etcdx/server/auth"
)

// GatewayMark is the metadata the JSON gateway adds to every request it forwards.
const GatewayMark = "etcdx-gateway"

// callerRule is what a method asks of its caller before it runs, with auth on (the per-key
// checks happen where the keys are known: etcdserver, and again at apply).
type callerRule int

const (
	anyCaller   callerRule = iota
	namedCaller            // some user (upstream's requireAuthInfo)
	rootCaller             // a user with the root role
)

// methodRules are upstream's: maintenance and membership changes need root; status, lists and
// leases need a user.
var methodRules = map[string]callerRule{
	"/etcdserverpb.KV/Compact":               rootCaller,
	"/etcdserverpb.Maintenance/Defragment":   rootCaller,
	"/etcdserverpb.Maintenance/Snapshot":     rootCaller,
	"/etcdserverpb.Maintenance/Hash":         rootCaller,
	"/etcdserverpb.Maintenance/HashKV":       rootCaller,
	"/etcdserverpb.Maintenance/MoveLeader":   rootCaller,
	"/etcdserverpb.Maintenance/Downgrade":    rootCaller,
	"/etcdserverpb.Cluster/MemberAdd":        rootCaller,
	"/etcdserverpb.Cluster/MemberRemove":     rootCaller,
	"/etcdserverpb.Cluster/MemberUpdate":     rootCaller,
	"/etcdserverpb.Cluster/MemberPromote":    rootCaller,
	"/etcdserverpb.Maintenance/Status":       namedCaller,
	"/etcdserverpb.Cluster/MemberList":       namedCaller,
	"/etcdserverpb.Lease/LeaseGrant":         namedCaller,
	"/etcdserverpb.Lease/LeaseRevoke":        namedCaller,
	"/etcdserverpb.Lease/LeaseTimeToLive":    namedCaller,
	"/etcdserverpb.Lease/LeaseLeases":        namedCaller,
	"/etcdserverpb.Maintenance/Alarm":        namedCaller, // and root to change alarms, below
	"/etcdserverpb.Auth/Authenticate":        anyCaller,
	"/grpc.health.v1.Health/Check":           anyCaller,
	"/grpc.health.v1.Health/Watch":           anyCaller,
	"/etcdserverpb.Lease/LeaseKeepAlive":     anyCaller, // checked per renewal
	"/etcdserverpb.Watch/Watch":              anyCaller, // checked per watch
	"/etcdserverpb.Maintenance/AlarmList":    anyCaller,
	"/etcdserverpb.Cluster/MemberListStream": anyCaller,
}

// requestCredentials reads the token ("token" metadata, or the gateway's "authorization", with
// or without "Bearer ") and the verified client certificate's common name. A request through
// the JSON gateway carries the member's own certificate, so its name is never the caller's.
func requestCredentials(ctx context.Context) auth.Credentials {
	var c auth.Credentials
	if v := metadata.ValueFromIncomingContext(ctx, rpctypes.TokenFieldNameGRPC); len(v) > 0 {
		c.Token = v[0]
	} else if v := metadata.ValueFromIncomingContext(ctx, rpctypes.TokenFieldNameSwagger); len(v) > 0 {
		c.Token = strings.TrimPrefix(v[0], "Bearer ")
	}
	if metadata.ValueFromIncomingContext(ctx, "grpcgateway-accept") != nil || metadata.ValueFromIncomingContext(ctx, GatewayMark) != nil {
		return c
	}
	if p, ok := peer.FromContext(ctx); ok && p.AuthInfo != nil {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			for _, chain := range ti.State.VerifiedChains {
				if len(chain) > 0 {
					c.CommonName = chain[0].Subject.CommonName
					break
				}
			}
		}
	}
	return c
}

// checkCaller applies a method's rule.
func checkCaller(ctx context.Context, s Callers, method string, req any) error {
	rule := methodRules[method]
	if ar, ok := req.(*pb.AlarmRequest); ok && ar.Action != pb.AlarmRequest_GET {
		rule = rootCaller
	}
	switch rule {
	case namedCaller:
		return s.RequireCaller(ctx)
	case rootCaller:
		return s.CheckAdmin(ctx)
	}
	return nil
}

// withCaller checks the method's rule for the caller and returns the context the handler gets,
// with the request's credentials when auth is on. With auth off nothing reads them (a request
// that passes here just before auth is turned on finds none later and is refused as having no
// user), so they are not looked up: four metadata lookups were 3% of a get's time.
func withCaller(ctx context.Context, s Callers, method string, req any) (context.Context, error) {
	if s.AuthEnabled() {
		ctx = auth.WithCredentials(ctx, requestCredentials(ctx))
	}
	if err := checkCaller(ctx, s, method, req); err != nil {
		return nil, togRPCError(err)
	}
	return ctx, nil
}

// credentialStream gives a stream's handler the context with the request's credentials.
type credentialStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c credentialStream) Context() context.Context { return c.ctx }

func authStream(s Callers) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		ctx := auth.WithCredentials(ss.Context(), requestCredentials(ss.Context()))
		if err := checkCaller(ctx, s, info.FullMethod, nil); err != nil {
			return togRPCError(err)
		}
		return h(srv, credentialStream{ServerStream: ss, ctx: ctx})
	}
}

// authServer is the Auth service.
type authServer struct {
	pb.UnimplementedAuthServer
	s   Auth
	hdr header
}

// authCall runs one Auth method and fills its header.
func authCall[Req any, Resp interface{ GetHeader() *pb.ResponseHeader }](ctx context.Context, a *authServer, r Req,
	f func(context.Context, Req) (Resp, error)) (Resp, error) {
	resp, err := f(ctx, r)
	if err != nil {
		var zero Resp
		return zero, togRPCError(err)
	}
	a.hdr.fill(resp.GetHeader())
	return resp, nil
}

func (a *authServer) AuthEnable(ctx context.Context, r *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error) {
	return authCall(ctx, a, r, a.s.AuthEnable)
}
func (a *authServer) AuthDisable(ctx context.Context, r *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error) {
	return authCall(ctx, a, r, a.s.AuthDisable)
}
func (a *authServer) AuthStatus(ctx context.Context, r *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error) {
	return authCall(ctx, a, r, a.s.AuthStatus)
}
func (a *authServer) Authenticate(ctx context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	return authCall(ctx, a, r, a.s.Authenticate)
}
func (a *authServer) UserAdd(ctx context.Context, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	return authCall(ctx, a, r, a.s.UserAdd)
}
func (a *authServer) UserGet(ctx context.Context, r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	return authCall(ctx, a, r, a.s.UserGet)
}
func (a *authServer) UserList(ctx context.Context, r *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error) {
	return authCall(ctx, a, r, a.s.UserList)
}
func (a *authServer) UserDelete(ctx context.Context, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	return authCall(ctx, a, r, a.s.UserDelete)
}
func (a *authServer) UserChangePassword(ctx context.Context, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	return authCall(ctx, a, r, a.s.UserChangePassword)
}
func (a *authServer) UserGrantRole(ctx context.Context, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	return authCall(ctx, a, r, a.s.UserGrantRole)
}
func (a *authServer) UserRevokeRole(ctx context.Context, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	return authCall(ctx, a, r, a.s.UserRevokeRole)
}
func (a *authServer) RoleAdd(ctx context.Context, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	return authCall(ctx, a, r, a.s.RoleAdd)
}
func (a *authServer) RoleGet(ctx context.Context, r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	return authCall(ctx, a, r, a.s.RoleGet)
}
func (a *authServer) RoleList(ctx context.Context, r *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error) {
	return authCall(ctx, a, r, a.s.RoleList)
}
func (a *authServer) RoleDelete(ctx context.Context, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	return authCall(ctx, a, r, a.s.RoleDelete)
}
func (a *authServer) RoleGrantPermission(ctx context.Context, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	return authCall(ctx, a, r, a.s.RoleGrantPermission)
}
func (a *authServer) RoleRevokePermission(ctx context.Context, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	return authCall(ctx, a, r, a.s.RoleRevokePermission)
}
