package etcdserver

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/apply"
	"etcdx/server/auth"
	"etcdx/server/schema"
	"etcdx/server/version"
)

// openAuth loads users and roles from the backend and starts the token provider; a new file
// gets upstream's first auth revision.
func (s *Server) openAuth() error {
	st, err := s.readAuth()
	if err != nil {
		return err
	}
	tokens, err := auth.NewTokens(s.cfg.AuthToken, s.cfg.AuthTokenTTL, s.applyW.wait, s.log)
	if err != nil {
		s.log.Warn("failed to create token provider", "error", err.Error())
		return err
	}
	s.auth = auth.NewStore(st, tokens, s.cfg.BcryptCost, s.log)
	b := s.be.Batch()
	err = s.auth.InitRevision(b)
	if uerr := b.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("record the first auth revision: %w", err)
	}
	return nil
}

func (s *Server) readAuth() (schema.AuthState, error) {
	var st schema.AuthState
	err := s.be.View(func(tx *bolt.Tx) error {
		var err error
		st, err = schema.ReadAuth(tx)
		return err
	})
	if err != nil {
		return st, fmt.Errorf("read auth state: %w", err)
	}
	return st, nil
}

// reloadAuth rereads the auth state after the database was replaced by a snapshot.
func (s *Server) reloadAuth() error {
	st, err := s.readAuth()
	if err != nil {
		return err
	}
	s.auth.Load(st)
	return nil
}

// Auth is the member's auth state.
func (s *Server) Auth() *auth.Store { return s.auth }

// AuthEnabled reports whether authentication is on.
func (s *Server) AuthEnabled() bool { return s.auth.Enabled() }

// Caller is who sent the request in ctx: the user of its token, or with --client-cert-auth the
// common name of its certificate. nil with auth off or without credentials; an error for a
// token this member does not accept.
func (s *Server) Caller(ctx context.Context) (*auth.Info, error) {
	if !s.auth.Enabled() {
		return nil, nil
	}
	if in := auth.InfoFrom(ctx); in != nil {
		return in, nil // the member's own requests (lease expiry) act as root
	}
	c := auth.CredentialsFrom(ctx)
	if c.Token != "" {
		return s.auth.InfoFromToken(ctx, c.Token)
	}
	if s.cfg.ClientCertAuth && c.CommonName != "" {
		return &auth.Info{Username: c.CommonName, Revision: s.auth.Revision()}, nil
	}
	return nil, nil
}

// RequireCaller refuses, with auth on, a request that names no user (upstream's
// requireAuthInfo: status, member list, alarm list, leases).
func (s *Server) RequireCaller(ctx context.Context) error {
	in, err := s.Caller(ctx)
	if err != nil {
		return err
	}
	if in == nil && s.auth.Enabled() {
		return auth.ErrUserEmpty
	}
	return nil
}

// CheckAdmin refuses, with auth on, a caller without the root role.
func (s *Server) CheckAdmin(ctx context.Context) error {
	in, err := s.Caller(ctx)
	if err != nil {
		return err
	}
	return s.auth.IsAdminPermitted(in)
}

// AsRoot marks a request the member makes itself (revoking an expired lease, health reads) as root's, as
// upstream does, so every member's permission check at apply lets it through.
func (s *Server) AsRoot(ctx context.Context) context.Context {
	if !s.auth.Enabled() {
		return ctx
	}
	return auth.WithInfo(ctx, &auth.Info{Username: auth.RootUser, Revision: s.auth.Revision()})
}

// checkedRead runs a read after chk allowed the caller, and refuses its answer if the auth
// state changed meanwhile (upstream's doSerialize).
func (s *Server) checkedRead(ctx context.Context, chk func(*auth.Info) error, read func() error) error {
	if !s.auth.Enabled() {
		return read()
	}
	in, err := s.Caller(ctx)
	if err != nil {
		return err
	}
	if in == nil {
		in = &auth.Info{}
	}
	if err := chk(in); err != nil {
		return err
	}
	if err := read(); err != nil {
		return err
	}
	if in.Revision != 0 && in.Revision != s.auth.Revision() {
		return auth.ErrAuthOldRevision
	}
	return nil
}

// WatchPermitted says whether the caller may watch key (or [key, rangeEnd)).
func (s *Server) WatchPermitted(ctx context.Context, key, rangeEnd []byte) error {
	in, err := s.Caller(ctx)
	if err != nil {
		return err
	}
	if in == nil {
		in = &auth.Info{}
	}
	return s.auth.IsRangePermitted(in, key, rangeEnd)
}

// ---- permission checks of replicated requests (at apply, on every member) ----

// needsAdmin lists the requests only root may make. AuthStatus is root's below 3.7 and
// anyone's from 3.7 (decided by the member that answers it: it changes nothing).
func needsAdmin(r *pb.InternalRaftRequest, level version.Level) bool {
	if r.AuthStatus != nil {
		return !version.OpenAuthStatus.Built(level)
	}
	return r.AuthEnable != nil || r.AuthDisable != nil || r.AuthUserAdd != nil ||
		r.AuthUserDelete != nil || r.AuthUserChangePassword != nil || r.AuthUserGrantRole != nil ||
		r.AuthUserRevokeRole != nil || r.AuthRoleAdd != nil || r.AuthRoleGrantPermission != nil ||
		r.AuthRoleRevokePermission != nil || r.AuthRoleDelete != nil || r.AuthUserList != nil || r.AuthRoleList != nil
}

// checkLeaseUse is the API-side check of keep-alive and time-to-live: a named caller, allowed on
// every key of the lease, and no auth change meanwhile.
func (s *Server) checkLeaseUse(ctx context.Context, id int64, write bool) error {
	if !s.auth.Enabled() {
		return nil
	}
	rev := s.auth.Revision()
	in, err := s.Caller(ctx)
	if err != nil {
		return err
	}
	if in == nil {
		return auth.ErrUserEmpty
	}
	if err := apply.LeasePermitted(s.auth, s.les, in, id, write); err != nil {
		return err
	}
	if rev != s.auth.Revision() {
		return auth.ErrAuthOldRevision
	}
	return nil
}

// checkApplyAuth checks the caller's permissions for a key or lease request (apply.Permitted).
func (s *Server) checkApplyAuth(in *auth.Info, r *pb.InternalRaftRequest) error {
	return apply.Permitted(s.auth, s.les, in, r)
}

// applyAuth applies the auth requests of an entry; ok is false for any other request.
func (s *Server) applyAuth(b schema.Writer, r *pb.InternalRaftRequest, in *auth.Info, index uint64) (res *applyResult, ok bool) {
	var resp any
	var err error
	a := s.auth
	switch {
	case r.Authenticate != nil:
		resp, err = a.ApplyAuthenticate(r.Authenticate, index)
	case r.AuthEnable != nil:
		resp, err = a.ApplyEnable(b)
	case r.AuthDisable != nil:
		resp, err = a.ApplyDisable(b)
	case r.AuthStatus != nil:
		resp = a.Status()
	case r.AuthUserAdd != nil:
		resp, err = a.ApplyUserAdd(b, r.AuthUserAdd)
	case r.AuthUserDelete != nil:
		resp, err = a.ApplyUserDelete(b, r.AuthUserDelete)
	case r.AuthUserChangePassword != nil:
		resp, err = a.ApplyUserChangePassword(b, r.AuthUserChangePassword)
	case r.AuthUserGrantRole != nil:
		resp, err = a.ApplyUserGrantRole(b, r.AuthUserGrantRole)
	case r.AuthUserRevokeRole != nil:
		resp, err = a.ApplyUserRevokeRole(b, r.AuthUserRevokeRole)
	case r.AuthUserGet != nil:
		// A user may read itself.
		if aerr := a.IsAdminPermitted(in); aerr != nil && r.AuthUserGet.Name != in.Username {
			return &applyResult{err: aerr}, true
		}
		resp, err = a.ApplyUserGet(r.AuthUserGet)
	case r.AuthUserList != nil:
		resp = a.ApplyUserList()
	case r.AuthRoleAdd != nil:
		resp, err = a.ApplyRoleAdd(b, r.AuthRoleAdd)
	case r.AuthRoleDelete != nil:
		resp, err = a.ApplyRoleDelete(b, r.AuthRoleDelete)
	case r.AuthRoleGet != nil:
		// A user may read the roles it has.
		if aerr := a.IsAdminPermitted(in); aerr != nil && !a.HasRole(in.Username, r.AuthRoleGet.Role) {
			return &applyResult{err: aerr}, true
		}
		resp, err = a.ApplyRoleGet(r.AuthRoleGet)
	case r.AuthRoleList != nil:
		resp = a.ApplyRoleList()
	case r.AuthRoleGrantPermission != nil:
		resp, err = a.ApplyRoleGrantPermission(b, r.AuthRoleGrantPermission)
	case r.AuthRoleRevokePermission != nil:
		resp, err = a.ApplyRoleRevokePermission(b, r.AuthRoleRevokePermission)
	default:
		return nil, false
	}
	if err != nil {
		return &applyResult{err: err}, true
	}
	return &applyResult{resp: withHeader(resp, s.kv.Rev())}, true
}

// withHeader gives an auth response the header every response carries.
func withHeader(resp any, rev int64) any {
	h := &pb.ResponseHeader{Revision: rev}
	switch r := resp.(type) {
	case *pb.AuthenticateResponse:
		r.Header = h
	case *pb.AuthEnableResponse:
		r.Header = h
	case *pb.AuthDisableResponse:
		r.Header = h
	case *pb.AuthStatusResponse:
		r.Header = h
	case *pb.AuthUserAddResponse:
		r.Header = h
	case *pb.AuthUserDeleteResponse:
		r.Header = h
	case *pb.AuthUserChangePasswordResponse:
		r.Header = h
	case *pb.AuthUserGrantRoleResponse:
		r.Header = h
	case *pb.AuthUserRevokeRoleResponse:
		r.Header = h
	case *pb.AuthUserGetResponse:
		r.Header = h
	case *pb.AuthUserListResponse:
		r.Header = h
	case *pb.AuthRoleAddResponse:
		r.Header = h
	case *pb.AuthRoleDeleteResponse:
		r.Header = h
	case *pb.AuthRoleGetResponse:
		r.Header = h
	case *pb.AuthRoleListResponse:
		r.Header = h
	case *pb.AuthRoleGrantPermissionResponse:
		r.Header = h
	case *pb.AuthRoleRevokePermissionResponse:
		r.Header = h
	}
	return resp
}

// ---- the Auth service ----

// Authenticate checks the password here, then replicates the login so that every member knows
// the token; the password itself never enters the raft log.
func (s *Server) Authenticate(ctx context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	for {
		rev, err := s.auth.CheckPassword(ctx, r.Name, r.Password)
		if err != nil {
			if !errors.Is(err, auth.ErrAuthNotEnabled) {
				s.log.Warn("invalid authentication was requested", "user", r.Name, "error", err.Error())
			}
			return nil, err
		}
		prefix, err := s.auth.TokenPrefix()
		if err != nil {
			return nil, err
		}
		resp, err := proposeAs[*pb.AuthenticateResponse](ctx, s,
			&pb.InternalRaftRequest{Authenticate: &pb.InternalAuthenticateRequest{Name: r.Name, SimpleToken: prefix}})
		if err != nil {
			return nil, err
		}
		if rev == s.auth.Revision() {
			return resp, nil
		}
		// Users or roles changed between the password check and the login: check again.
		s.log.Info("revision when password checked became stale; retrying")
	}
}

func (s *Server) AuthEnable(ctx context.Context, r *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error) {
	return proposeAs[*pb.AuthEnableResponse](ctx, s, &pb.InternalRaftRequest{AuthEnable: r})
}

func (s *Server) AuthDisable(ctx context.Context, r *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error) {
	return proposeAs[*pb.AuthDisableResponse](ctx, s, &pb.InternalRaftRequest{AuthDisable: r})
}

func (s *Server) AuthStatus(ctx context.Context, r *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error) {
	return proposeAs[*pb.AuthStatusResponse](ctx, s, &pb.InternalRaftRequest{AuthStatus: r})
}

// UserAdd replicates the bcrypt hash, never the password.
func (s *Server) UserAdd(ctx context.Context, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	if r.Options == nil || !r.Options.NoPassword {
		h, err := s.auth.HashPassword(r.Password)
		if err != nil {
			return nil, err
		}
		r.HashedPassword, r.Password = h, ""
	}
	return proposeAs[*pb.AuthUserAddResponse](ctx, s, &pb.InternalRaftRequest{AuthUserAdd: r})
}

func (s *Server) UserDelete(ctx context.Context, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	return proposeAs[*pb.AuthUserDeleteResponse](ctx, s, &pb.InternalRaftRequest{AuthUserDelete: r})
}

func (s *Server) UserChangePassword(ctx context.Context, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	if r.Password != "" {
		h, err := s.auth.HashPassword(r.Password)
		if err != nil {
			return nil, err
		}
		r.HashedPassword, r.Password = h, ""
	}
	return proposeAs[*pb.AuthUserChangePasswordResponse](ctx, s, &pb.InternalRaftRequest{AuthUserChangePassword: r})
}

func (s *Server) UserGrantRole(ctx context.Context, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	return proposeAs[*pb.AuthUserGrantRoleResponse](ctx, s, &pb.InternalRaftRequest{AuthUserGrantRole: r})
}

func (s *Server) UserRevokeRole(ctx context.Context, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	return proposeAs[*pb.AuthUserRevokeRoleResponse](ctx, s, &pb.InternalRaftRequest{AuthUserRevokeRole: r})
}

func (s *Server) UserGet(ctx context.Context, r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	return proposeAs[*pb.AuthUserGetResponse](ctx, s, &pb.InternalRaftRequest{AuthUserGet: r})
}

func (s *Server) UserList(ctx context.Context, r *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error) {
	return proposeAs[*pb.AuthUserListResponse](ctx, s, &pb.InternalRaftRequest{AuthUserList: r})
}

func (s *Server) RoleAdd(ctx context.Context, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	return proposeAs[*pb.AuthRoleAddResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleAdd: r})
}

func (s *Server) RoleDelete(ctx context.Context, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	return proposeAs[*pb.AuthRoleDeleteResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleDelete: r})
}

func (s *Server) RoleGet(ctx context.Context, r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	return proposeAs[*pb.AuthRoleGetResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleGet: r})
}

func (s *Server) RoleList(ctx context.Context, r *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error) {
	return proposeAs[*pb.AuthRoleListResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleList: r})
}

func (s *Server) RoleGrantPermission(ctx context.Context, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	return proposeAs[*pb.AuthRoleGrantPermissionResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleGrantPermission: r})
}

func (s *Server) RoleRevokePermission(ctx context.Context, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	return proposeAs[*pb.AuthRoleRevokePermissionResponse](ctx, s, &pb.InternalRaftRequest{AuthRoleRevokePermission: r})
}
