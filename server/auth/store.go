package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"golang.org/x/crypto/bcrypt"

	"etcdx/server/schema"
)

const (
	RootUser = "root"
	RootRole = "root"
)

// rootPerm is what RoleGet shows for the root role: everything, read and write.
var rootPerm = authpb.Permission{PermType: authpb.READWRITE, Key: []byte{}, RangeEnd: []byte{0}}

// Store is a member's auth state. The apply loop changes it (through the Apply* methods, each
// writing the auth buckets in the same batch as the raft entry); request handlers read it.
type Store struct {
	lg     *slog.Logger
	cost   int
	tokens Tokens
	// checking bounds concurrent bcrypt comparisons, so a burst of logins (or of wrong
	// passwords) leaves CPU for every other request.
	checking chan struct{}

	rev atomic.Uint64

	// enabled is read without mu: every request asks it, and with auth off that is all it asks.
	enabled atomic.Bool

	mu    sync.RWMutex
	users map[string]*authpb.User
	roles map[string]*authpb.Role
	perms map[string]*userPerms
}

// NewStore builds the store over state read from the auth buckets. bcryptCost outside
// bcrypt's bounds falls back to its default, as upstream.
func NewStore(st schema.AuthState, tokens Tokens, bcryptCost int, lg *slog.Logger) *Store {
	if bcryptCost < bcrypt.MinCost || bcryptCost > bcrypt.MaxCost {
		lg.Warn("use default bcrypt cost instead of the invalid given cost", "min-cost", bcrypt.MinCost,
			"max-cost", bcrypt.MaxCost, "default-cost", bcrypt.DefaultCost, "given-cost", bcryptCost)
		bcryptCost = bcrypt.DefaultCost
	}
	n := runtime.GOMAXPROCS(0) / 2
	if n < 1 {
		n = 1
	}
	s := &Store{lg: lg, cost: bcryptCost, tokens: tokens, checking: make(chan struct{}, n)}
	s.Load(st)
	return s
}

// Load replaces the state (at start, and after a snapshot replaced the database).
func (s *Store) Load(st schema.AuthState) {
	s.mu.Lock()
	s.users, s.roles = st.Users, st.Roles
	s.enabled.Store(st.Enabled)
	s.rev.Store(st.Revision)
	s.refreshPerms()
	s.mu.Unlock()
	if st.Enabled {
		s.tokens.Enable()
	} else {
		s.tokens.Disable()
	}
}

// Close stops the token expiry.
func (s *Store) Close() { s.tokens.Disable() }

// BcryptCost is the cost new password hashes are made with.
func (s *Store) BcryptCost() int { return s.cost }

// Revision is the auth revision: it moves with every change to users, roles or permissions.
func (s *Store) Revision() uint64 { return s.rev.Load() }

// Enabled says whether authentication is on.
func (s *Store) Enabled() bool { return s.enabled.Load() }

// refreshPerms rebuilds every user's merged permissions (callers hold mu).
func (s *Store) refreshPerms() {
	s.perms = make(map[string]*userPerms, len(s.users))
	for name, u := range s.users {
		s.perms[name] = mergePerms(u, s.roles)
	}
}

// commit bumps the revision and records it with the change (callers hold mu).
func (s *Store) commit(w schema.Writer) error {
	next := s.rev.Load() + 1
	if err := schema.PutAuthRevision(w, next); err != nil {
		return err
	}
	s.rev.Store(next)
	s.refreshPerms()
	return nil
}

// InitRevision gives a new file upstream's starting revision, 1.
func (s *Store) InitRevision(w schema.Writer) error {
	if s.rev.Load() != 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commit(w)
}

// withoutRole is a copy of u without role.
func withoutRole(u *authpb.User, role string) *authpb.User {
	nu := &authpb.User{Name: u.Name, Password: u.Password, Options: u.Options}
	for _, r := range u.Roles {
		if r != role {
			nu.Roles = append(nu.Roles, r)
		}
	}
	return nu
}

func hasRootRole(u *authpb.User) bool {
	i := sort.SearchStrings(u.Roles, RootRole)
	return i < len(u.Roles) && u.Roles[i] == RootRole
}

// ---- permission questions ----

// InfoFromToken reads a token sent by a client.
func (s *Store) InfoFromToken(ctx context.Context, token string) (*Info, error) {
	in, ok := s.tokens.Info(ctx, token, s.Revision())
	if !ok {
		s.lg.Warn("invalid auth token", "token-fingerprint", Fingerprint(token))
		return nil, ErrInvalidAuthToken
	}
	return in, nil
}

func (s *Store) isPermitted(in *Info, key, rangeEnd []byte, write bool) error {
	if !s.enabled.Load() {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if in == nil || in.Revision == 0 {
		return ErrUserEmpty
	}
	if rev := s.rev.Load(); in.Revision < rev {
		s.lg.Warn("request auth revision is less than current node auth revision",
			"current node auth revision", rev, "request auth revision", in.Revision, "request key", string(key),
			"error", ErrAuthOldRevision.Error())
		return ErrAuthOldRevision
	}
	u := s.users[in.Username]
	if u == nil {
		s.lg.Error("cannot find a user for permission check", "user-name", in.Username)
		return ErrPermissionDenied
	}
	if hasRootRole(u) {
		return nil
	}
	if p := s.perms[in.Username]; p != nil && p.allows(write, key, rangeEnd) {
		return nil
	}
	return ErrPermissionDenied
}

// IsRangePermitted: may the caller read key (or [key, rangeEnd))?
func (s *Store) IsRangePermitted(in *Info, key, rangeEnd []byte) error {
	return s.isPermitted(in, key, rangeEnd, false)
}

// IsPutPermitted: may the caller write key?
func (s *Store) IsPutPermitted(in *Info, key []byte) error { return s.isPermitted(in, key, nil, true) }

// IsDeleteRangePermitted: may the caller delete key (or [key, rangeEnd))?
func (s *Store) IsDeleteRangePermitted(in *Info, key, rangeEnd []byte) error {
	return s.isPermitted(in, key, rangeEnd, true)
}

// IsAdminPermitted: is the caller a user with the root role? (Always, with auth off.)
func (s *Store) IsAdminPermitted(in *Info) error {
	if !s.enabled.Load() {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if in == nil || in.Username == "" {
		return ErrUserEmpty
	}
	u := s.users[in.Username]
	if u == nil {
		return ErrUserNotFound
	}
	if !hasRootRole(u) {
		return ErrPermissionDenied
	}
	return nil
}

// HasRole says whether user has role.
func (s *Store) HasRole(user, role string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u := s.users[user]
	if u == nil {
		s.lg.Warn("'has-role' requested for non-existing user", "user-name", user, "role-name", role)
		return false
	}
	for _, r := range u.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// ---- passwords ----

// CheckPassword compares password with the user's hash and returns the revision it was
// checked at. At most a few comparisons run at once; the rest wait their turn (or ctx).
func (s *Store) CheckPassword(ctx context.Context, name, password string) (uint64, error) {
	s.mu.RLock()
	enabled, u, rev := s.enabled.Load(), s.users[name], s.rev.Load()
	s.mu.RUnlock()
	if !enabled {
		return 0, ErrAuthNotEnabled
	}
	if u == nil {
		return 0, ErrAuthFailed
	}
	if u.Options != nil && u.Options.NoPassword {
		return 0, ErrNoPasswordUser
	}
	select {
	case s.checking <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	err := bcrypt.CompareHashAndPassword(u.Password, []byte(password))
	<-s.checking
	if err != nil {
		s.lg.Info("invalid password", "user-name", name)
		return 0, ErrAuthFailed
	}
	return rev, nil
}

// HashPassword hashes a new password at the store's cost, base64 as upstream replicates it
// (so the raft log never holds the password itself).
func (s *Store) HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), s.cost)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(h), nil
}

// ---- tokens ----

// TokenPrefix is the random part of a simple token, chosen before proposing Authenticate.
func (s *Store) TokenPrefix() (string, error) { return s.tokens.Prefix() }

// ---- applying replicated requests ----

// ApplyAuthenticate issues the token of an Authenticate entry at index.
func (s *Store) ApplyAuthenticate(r *pb.InternalAuthenticateRequest, index uint64) (*pb.AuthenticateResponse, error) {
	s.mu.RLock()
	enabled, u := s.enabled.Load(), s.users[r.Name]
	s.mu.RUnlock()
	if !enabled {
		return nil, ErrAuthNotEnabled
	}
	if u == nil || (u.Options != nil && u.Options.NoPassword) {
		return nil, ErrAuthFailed
	}
	// Upstream names a simple token after the index applied before its Authenticate entry
	// (its consistent index while applying it), so tokens read the same on every member.
	tok, err := s.tokens.Assign(r.Name, s.Revision(), index-1, r.SimpleToken)
	if err != nil {
		return nil, err
	}
	s.lg.Debug("authenticated a user", "user-name", r.Name, "token-fingerprint", Fingerprint(tok))
	return &pb.AuthenticateResponse{Token: tok}, nil
}

// ApplyEnable turns auth on; the root user with the root role must exist.
func (s *Store) ApplyEnable(w schema.Writer) (*pb.AuthEnableResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enabled.Load() {
		s.lg.Info("authentication is already enabled; ignored auth enable request")
		return &pb.AuthEnableResponse{}, nil
	}
	root := s.users[RootUser]
	if root == nil {
		return nil, ErrRootUserNotExist
	}
	if !hasRootRole(root) {
		return nil, ErrRootRoleNotExist
	}
	if err := schema.PutAuthEnabled(w, true); err != nil {
		return nil, err
	}
	s.enabled.Store(true)
	s.tokens.Enable()
	s.lg.Info("enabled authentication")
	return &pb.AuthEnableResponse{}, nil
}

// ApplyDisable turns auth off and forgets every token.
func (s *Store) ApplyDisable(w schema.Writer) (*pb.AuthDisableResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabled.Load() {
		return &pb.AuthDisableResponse{}, nil
	}
	if err := schema.PutAuthEnabled(w, false); err != nil {
		return nil, err
	}
	if err := s.commit(w); err != nil {
		return nil, err
	}
	s.enabled.Store(false)
	s.tokens.Disable()
	s.lg.Info("disabled authentication")
	return &pb.AuthDisableResponse{}, nil
}

// Status reports whether auth is on and the revision.
func (s *Store) Status() *pb.AuthStatusResponse {
	return &pb.AuthStatusResponse{Enabled: s.Enabled(), AuthRevision: s.Revision()}
}

// password is what a replicated add or change sets: the hash the proposer made, or (entries
// from releases before 3.5 carry the password) a hash made now.
func (s *Store) password(plain, hashed string) ([]byte, error) {
	if plain != "" && hashed == "" {
		return bcrypt.GenerateFromPassword([]byte(plain), s.cost)
	}
	return base64.StdEncoding.DecodeString(hashed)
}

func (s *Store) ApplyUserAdd(w schema.Writer, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	if r.Name == "" {
		return nil, ErrUserEmpty
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[r.Name] != nil {
		return nil, ErrUserAlreadyExist
	}
	opts := r.Options
	if opts == nil {
		opts = &authpb.UserAddOptions{}
	}
	u := &authpb.User{Name: []byte(r.Name), Options: opts}
	if !opts.NoPassword {
		pw, err := s.password(r.Password, r.HashedPassword)
		if err != nil {
			return nil, ErrNoPasswordUser
		}
		u.Password = pw
	}
	if err := s.putUser(w, u); err != nil {
		return nil, err
	}
	s.lg.Info("added a user", "user-name", r.Name)
	return &pb.AuthUserAddResponse{}, nil
}

// putUser stores u and commits a new revision (callers hold mu).
func (s *Store) putUser(w schema.Writer, u *authpb.User) error {
	if err := schema.PutUser(w, u); err != nil {
		return err
	}
	s.users[string(u.Name)] = u
	return s.commit(w)
}

func (s *Store) ApplyUserDelete(w schema.Writer, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enabled.Load() && r.Name == RootUser {
		s.lg.Error("cannot delete 'root' user", "user-name", r.Name)
		return nil, ErrInvalidAuthMgmt
	}
	u := s.users[r.Name]
	if u == nil {
		return nil, ErrUserNotFound
	}
	if err := schema.DeleteUser(w, r.Name); err != nil {
		return nil, err
	}
	delete(s.users, r.Name)
	if err := s.commit(w); err != nil {
		return nil, err
	}
	s.tokens.InvalidateUser(r.Name)
	s.lg.Info("deleted a user", "user-name", r.Name, "user-roles", u.Roles)
	return &pb.AuthUserDeleteResponse{}, nil
}

func (s *Store) ApplyUserChangePassword(w schema.Writer, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[r.Name]
	if u == nil {
		return nil, ErrUserNotFound
	}
	nu := &authpb.User{Name: u.Name, Roles: u.Roles, Options: u.Options}
	if u.Options == nil || !u.Options.NoPassword {
		pw, err := s.password(r.Password, r.HashedPassword)
		if err != nil {
			return nil, ErrNoPasswordUser
		}
		nu.Password = pw
	}
	if err := s.putUser(w, nu); err != nil {
		return nil, err
	}
	s.tokens.InvalidateUser(r.Name)
	s.lg.Info("changed a password of a user", "user-name", r.Name, "user-roles", u.Roles)
	return &pb.AuthUserChangePasswordResponse{}, nil
}

func (s *Store) ApplyUserGrantRole(w schema.Writer, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[r.User]
	if u == nil {
		return nil, ErrUserNotFound
	}
	// The root role may be granted before it is created, as upstream allows.
	if r.Role != RootRole && s.roles[r.Role] == nil {
		return nil, ErrRoleNotFound
	}
	i := sort.SearchStrings(u.Roles, r.Role)
	if i < len(u.Roles) && u.Roles[i] == r.Role {
		s.lg.Warn("ignored grant role request to a user", "user-name", r.User, "user-roles", u.Roles, "duplicate-role-name", r.Role)
		return &pb.AuthUserGrantRoleResponse{}, nil
	}
	roles := append(append([]string{}, u.Roles...), r.Role)
	sort.Strings(roles)
	nu := &authpb.User{Name: u.Name, Password: u.Password, Roles: roles, Options: u.Options}
	if err := s.putUser(w, nu); err != nil {
		return nil, err
	}
	s.lg.Info("granted a role to a user", "user-name", r.User, "user-roles", roles, "added-role-name", r.Role)
	return &pb.AuthUserGrantRoleResponse{}, nil
}

func (s *Store) ApplyUserRevokeRole(w schema.Writer, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enabled.Load() && r.Name == RootUser && r.Role == RootRole {
		s.lg.Error("'root' user cannot revoke 'root' role", "user-name", r.Name, "role-name", r.Role)
		return nil, ErrInvalidAuthMgmt
	}
	u := s.users[r.Name]
	if u == nil {
		return nil, ErrUserNotFound
	}
	nu := withoutRole(u, r.Role)
	if len(nu.Roles) == len(u.Roles) {
		return nil, ErrRoleNotGranted
	}
	if err := s.putUser(w, nu); err != nil {
		return nil, err
	}
	s.lg.Info("revoked a role from a user", "user-name", r.Name, "old-user-roles", u.Roles, "new-user-roles", nu.Roles, "revoked-role-name", r.Role)
	return &pb.AuthUserRevokeRoleResponse{}, nil
}

func (s *Store) ApplyUserGet(r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u := s.users[r.Name]
	if u == nil {
		return nil, ErrUserNotFound
	}
	return &pb.AuthUserGetResponse{Roles: append([]string(nil), u.Roles...)}, nil
}

func (s *Store) ApplyUserList() *pb.AuthUserListResponse {
	s.mu.RLock()
	defer s.mu.RUnlock()
	resp := &pb.AuthUserListResponse{Users: make([]string, 0, len(s.users))}
	for name := range s.users {
		resp.Users = append(resp.Users, name)
	}
	sort.Strings(resp.Users) // bbolt's key order
	return resp
}

func (s *Store) ApplyRoleAdd(w schema.Writer, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	if r.Name == "" {
		return nil, ErrRoleEmpty
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.roles[r.Name] != nil {
		return nil, ErrRoleAlreadyExist
	}
	role := &authpb.Role{Name: []byte(r.Name)}
	if err := s.putRole(w, role); err != nil {
		return nil, err
	}
	s.lg.Info("created a role", "role-name", r.Name)
	return &pb.AuthRoleAddResponse{}, nil
}

// putRole stores role and commits a new revision (callers hold mu).
func (s *Store) putRole(w schema.Writer, role *authpb.Role) error {
	if err := schema.PutRole(w, role); err != nil {
		return err
	}
	s.roles[string(role.Name)] = role
	return s.commit(w)
}

func (s *Store) ApplyRoleGet(r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	role := s.roles[r.Role]
	if role == nil {
		return nil, ErrRoleNotFound
	}
	if r.Role == RootRole {
		p := rootPerm
		return &pb.AuthRoleGetResponse{Perm: []*authpb.Permission{&p}}, nil
	}
	resp := &pb.AuthRoleGetResponse{}
	for _, p := range role.KeyPermission {
		c := *p
		resp.Perm = append(resp.Perm, &c)
	}
	return resp, nil
}

func (s *Store) ApplyRoleList() *pb.AuthRoleListResponse {
	s.mu.RLock()
	defer s.mu.RUnlock()
	resp := &pb.AuthRoleListResponse{Roles: make([]string, 0, len(s.roles))}
	for name := range s.roles {
		resp.Roles = append(resp.Roles, name)
	}
	sort.Strings(resp.Roles)
	return resp
}

func (s *Store) ApplyRoleDelete(w schema.Writer, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enabled.Load() && r.Role == RootRole {
		s.lg.Error("cannot delete 'root' role", "role-name", r.Role)
		return nil, ErrInvalidAuthMgmt
	}
	if s.roles[r.Role] == nil {
		return nil, ErrRoleNotFound
	}
	if err := schema.DeleteRole(w, r.Role); err != nil {
		return nil, err
	}
	delete(s.roles, r.Role)
	// The role leaves every user that had it.
	for name, u := range s.users {
		nu := withoutRole(u, r.Role)
		if len(nu.Roles) == len(u.Roles) {
			continue
		}
		if err := schema.PutUser(w, nu); err != nil {
			return nil, err
		}
		s.users[name] = nu
	}
	if err := s.commit(w); err != nil {
		return nil, err
	}
	s.lg.Info("deleted a role", "role-name", r.Role)
	return &pb.AuthRoleDeleteResponse{}, nil
}

func (s *Store) ApplyRoleGrantPermission(w schema.Writer, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	if r.Perm == nil {
		return nil, ErrPermissionNotGiven
	}
	if !validPermRange(r.Perm.Key, r.Perm.RangeEnd) {
		return nil, ErrInvalidAuthMgmt
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	role := s.roles[r.Name]
	if role == nil {
		return nil, ErrRoleNotFound
	}
	perms := make([]*authpb.Permission, 0, len(role.KeyPermission)+1)
	updated := false
	for _, p := range role.KeyPermission {
		c := *p
		if bytes.Equal(c.Key, r.Perm.Key) && bytes.Equal(c.RangeEnd, r.Perm.RangeEnd) {
			c.PermType, updated = r.Perm.PermType, true
		}
		perms = append(perms, &c)
	}
	if !updated {
		perms = append(perms, &authpb.Permission{Key: r.Perm.Key, RangeEnd: r.Perm.RangeEnd, PermType: r.Perm.PermType})
		sort.SliceStable(perms, func(i, j int) bool { return bytes.Compare(perms[i].Key, perms[j].Key) < 0 })
	}
	if err := s.putRole(w, &authpb.Role{Name: role.Name, KeyPermission: perms}); err != nil {
		return nil, err
	}
	s.lg.Info("granted/updated a permission to a user", "user-name", r.Name,
		"permission-name", authpb.Permission_Type_name[int32(r.Perm.PermType)], "key", string(r.Perm.Key), "range-end", string(r.Perm.RangeEnd))
	return &pb.AuthRoleGrantPermissionResponse{}, nil
}

func (s *Store) ApplyRoleRevokePermission(w schema.Writer, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	role := s.roles[r.Role]
	if role == nil {
		return nil, ErrRoleNotFound
	}
	nr := &authpb.Role{Name: role.Name}
	for _, p := range role.KeyPermission {
		if !bytes.Equal(p.Key, r.Key) || !bytes.Equal(p.RangeEnd, r.RangeEnd) {
			nr.KeyPermission = append(nr.KeyPermission, p)
		}
	}
	if len(nr.KeyPermission) == len(role.KeyPermission) {
		return nil, ErrPermissionNotGranted
	}
	if err := s.putRole(w, nr); err != nil {
		return nil, err
	}
	s.lg.Info("revoked a permission on range", "role-name", r.Role, "key", string(r.Key), "range-end", string(r.RangeEnd))
	return &pb.AuthRoleRevokePermissionResponse{}, nil
}
