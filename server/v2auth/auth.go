// Package v2auth is the v2 API's authentication as upstream etcd 3.5 keeps it: users and roles as
// JSON values under /2/users and /2/roles of the v2 store, /2/enabled the switch, every change a
// v2 request through raft (so members of ours and upstream's read the same values), the root
// role implicit and the guest role created when auth is enabled.
package v2auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"reflect"
	"slices"
	"sort"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"golang.org/x/crypto/bcrypt"

	"etcdx/server/v2store"
)

// Names and the namespace upstream uses.
const (
	Prefix    = v2store.AuthPrefix // "/2"
	RootRole  = "root"
	GuestRole = "guest"
	RootUser  = "root"
)

// User is a v2 user as stored and as the API shows it (the password is a bcrypt hash when
// stored; Grant and Revoke only appear in update requests).
type User struct {
	User     string   `json:"user"`
	Password string   `json:"password,omitempty"`
	Roles    []string `json:"roles"`
	Grant    []string `json:"grant,omitempty"`
	Revoke   []string `json:"revoke,omitempty"`
}

// Role is a v2 role: key patterns it may read and write ("/foo/*" a prefix).
type Role struct {
	Role        string       `json:"role"`
	Permissions Permissions  `json:"permissions"`
	Grant       *Permissions `json:"grant,omitempty"`
	Revoke      *Permissions `json:"revoke,omitempty"`
}

// Permissions are a role's key permissions.
type Permissions struct {
	KV RWPermission `json:"kv"`
}

// IsEmpty says whether p grants nothing (nil included).
func (p *Permissions) IsEmpty() bool {
	return p == nil || len(p.KV.Read) == 0 && len(p.KV.Write) == 0
}

// RWPermission lists the patterns for reading and for writing.
type RWPermission struct {
	Read  []string `json:"read"`
	Write []string `json:"write"`
}

// The two built-in roles: root may do anything, guest (what requests without credentials get
// once auth is on) everything until an operator narrows it.
var (
	rootRole  = Role{Role: RootRole, Permissions: Permissions{KV: RWPermission{Read: []string{"/*"}, Write: []string{"/*"}}}}
	guestRole = Role{Role: GuestRole, Permissions: Permissions{KV: RWPermission{Read: []string{"/*"}, Write: []string{"/*"}}}}
)

// Error is a refusal with the HTTP status it is answered with; its text starts "auth: " as
// upstream's does.
type Error struct {
	Status int
	Msg    string
}

func (e Error) Error() string { return e.Msg }

func refuse(status int, format string, args ...any) Error {
	return Error{Status: status, Msg: "auth: " + fmt.Sprintf(format, args...)}
}

// Doer serves a v2 request (the member's V2Do, reduced to the event).
type Doer func(ctx context.Context, r pb.Request) (*v2store.Event, error)

// Store reads and changes users and roles through do.
type Store struct {
	do  Doer
	log *slog.Logger
	// ctx bounds each request to the v2 store (the member's request timeout).
	ctx func() (context.Context, context.CancelFunc)
	// ensured: the auth directories were found or made once (each try costs raft entries).
	ensured atomic.Bool
}

// NewStore is the store over do, each request bounded by timeout.
func NewStore(do Doer, log *slog.Logger, ctx func() (context.Context, context.CancelFunc)) *Store {
	return &Store{do: do, log: log, ctx: ctx}
}

func isCode(err error, code int) bool {
	var e *v2store.Error
	return errors.As(err, &e) && e.ErrorCode == code
}

func (s *Store) request(r pb.Request) (*v2store.Event, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.do(ctx, r)
}

// read gets a value under /2; quorum reads through raft (before a change, as upstream).
func (s *Store) read(res string, quorum bool) (*v2store.Event, error) {
	m := http.MethodGet
	if quorum {
		m = "QGET"
	}
	return s.request(pb.Request{Method: m, Path: path.Join(Prefix, res)})
}

// ensureDirs creates /2, /2/users/, /2/roles/ and /2/enabled=false where missing, as upstream
// does before its first change (each a write of its own: the v2 store's indexes agree).
func (s *Store) ensureDirs() error {
	if s.ensured.Load() {
		return nil
	}
	no := false
	for _, d := range []string{Prefix, Prefix + "/users/", Prefix + "/roles/"} {
		_, err := s.request(pb.Request{Method: http.MethodPut, Path: d, Dir: true, PrevExist: &no})
		if err != nil && !isCode(err, v2store.EcodeNodeExist) {
			return fmt.Errorf("create the auth directory %s: %w", d, err)
		}
	}
	_, err := s.request(pb.Request{Method: http.MethodPut, Path: Prefix + "/enabled", Val: "false", PrevExist: &no})
	if err != nil && !isCode(err, v2store.EcodeNodeExist) {
		return err
	}
	s.ensured.Store(true)
	return nil
}

// put writes value as JSON at res, creating it (exist false) or replacing it (exist true).
func (s *Store) put(res string, value any, exist bool) error {
	if err := s.ensureDirs(); err != nil {
		return err
	}
	b, err := json.Marshal(value)
	if err != nil {
		return err
	}
	_, err = s.request(pb.Request{Method: http.MethodPut, Path: path.Join(Prefix, res), Val: string(b), PrevExist: &exist})
	return err
}

func (s *Store) remove(res string) error {
	if err := s.ensureDirs(); err != nil {
		return err
	}
	yes := true
	_, err := s.request(pb.Request{Method: http.MethodDelete, Path: path.Join(Prefix, res), PrevExist: &yes})
	return err
}

// list names the children of dir, sorted (none when the directory is missing).
func (s *Store) list(dir string) ([]string, error) {
	ev, err := s.read(dir+"/", false)
	if isCode(err, v2store.EcodeKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range ev.Node.Nodes {
		names = append(names, path.Base(n.Key))
	}
	sort.Strings(names)
	return names, nil
}

// Enabled says whether v2 auth is on.
func (s *Store) Enabled() bool {
	ev, err := s.read("/enabled", false)
	if err != nil {
		if !isCode(err, v2store.EcodeKeyNotFound) {
			s.log.Warn("failed to detect auth settings", "error", err)
		}
		return false
	}
	var on bool
	if ev.Node.Value == nil || json.Unmarshal([]byte(*ev.Node.Value), &on) != nil {
		s.log.Warn("internal bookkeeping value for enabled isn't valid JSON")
		return false
	}
	return on
}

// Enable turns auth on: it needs a root user, and creates the guest role if missing.
func (s *Store) Enable() error {
	if s.Enabled() {
		return refuse(http.StatusConflict, "already enabled")
	}
	if _, err := s.user(RootUser, true); err != nil {
		return refuse(http.StatusConflict, "No root user available, please create one")
	}
	if _, err := s.role(GuestRole, true); err != nil {
		s.log.Info("no guest role access found; creating default", "role-name", GuestRole)
		if err := s.CreateRole(guestRole); err != nil {
			return err
		}
	}
	if err := s.put("/enabled", true, true); err != nil {
		return err
	}
	s.log.Info("enabled auth")
	return nil
}

// Disable turns auth off.
func (s *Store) Disable() error {
	if !s.Enabled() {
		return refuse(http.StatusConflict, "already disabled")
	}
	if err := s.put("/enabled", false, true); err != nil {
		return err
	}
	s.log.Info("disabled auth")
	return nil
}

// Users names every user, sorted.
func (s *Store) Users() ([]string, error) { return s.list("/users") }

// User is a user as stored (root always holds the root role).
func (s *Store) User(name string) (User, error) { return s.user(name, false) }

func (s *Store) user(name string, quorum bool) (User, error) {
	ev, err := s.read("/users/"+name, quorum)
	if isCode(err, v2store.EcodeKeyNotFound) {
		return User{}, refuse(http.StatusNotFound, "User %s does not exist.", name)
	}
	if err != nil {
		return User{}, err
	}
	var u User
	if ev.Node.Value == nil {
		return User{}, fmt.Errorf("user %s: a directory, not a value", name)
	}
	if err := json.Unmarshal([]byte(*ev.Node.Value), &u); err != nil {
		return User{}, fmt.Errorf("user %s: %w", name, err)
	}
	if u.User == RootUser {
		u.Roles = withRoot(u.Roles)
	}
	return u, nil
}

func withRoot(roles []string) []string {
	if slices.Contains(roles, RootRole) {
		return roles
	}
	return append(roles, RootRole)
}

// CreateUser creates u with its password hashed.
func (s *Store) CreateUser(u User) (User, error) {
	if u.User == RootUser {
		u.Roles = withRoot(u.Roles)
	}
	if u.Password == "" {
		return u, refuse(http.StatusBadRequest, "Cannot create user %s with an empty password", u.User)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(u.Password), bcrypt.DefaultCost)
	if err != nil {
		return u, err
	}
	u.Password = string(hash)
	if err := s.put("/users/"+u.User, u, false); err != nil {
		if isCode(err, v2store.EcodeNodeExist) {
			return u, refuse(http.StatusConflict, "User %s already exists.", u.User)
		}
		return u, err
	}
	s.log.Info("created a user", "user-name", u.User)
	return u, nil
}

// CreateOrUpdateUser updates u if it exists, else creates it (created says which).
func (s *Store) CreateOrUpdateUser(u User) (User, bool, error) {
	if _, err := s.user(u.User, true); err == nil {
		out, err := s.UpdateUser(u)
		return out, false, err
	}
	out, err := s.CreateUser(u)
	return out, true, err
}

// UpdateUser applies a new password and role grants and revocations to an existing user.
func (s *Store) UpdateUser(u User) (User, error) {
	old, err := s.user(u.User, true)
	if err != nil {
		var ae Error
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return u, refuse(http.StatusNotFound, "User %s doesn't exist.", u.User)
		}
		return old, err
	}
	next, err := old.merge(s.log, u)
	if err != nil {
		return old, err
	}
	if reflect.DeepEqual(old, next) { // as upstream: a nil and an empty role list differ

		return old, refuse(http.StatusBadRequest, "User not updated. Use grant/revoke/password to update the user.")
	}
	if err := s.put("/users/"+u.User, next, true); err != nil {
		return next, err
	}
	s.log.Info("updated a user", "user-name", u.User)
	return next, nil
}

// merge is old with n's password (if any) and role grants and revocations; a duplicate grant or
// the revocation of a role not held is refused.
func (old User) merge(log *slog.Logger, n User) (User, error) {
	if old.User != n.User {
		return User{}, refuse(http.StatusConflict, "Merging user data with conflicting usernames: %s %s", old.User, n.User)
	}
	out := User{User: old.User, Password: old.Password}
	if n.Password != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(n.Password), bcrypt.DefaultCost)
		if err != nil {
			return old, err
		}
		out.Password = string(hash)
	}
	roles := map[string]bool{}
	for _, r := range old.Roles {
		roles[r] = true
	}
	for _, g := range n.Grant {
		if roles[g] {
			log.Warn("attempted to grant a duplicate role for a user", "user-name", n.User, "role-name", g)
			return User{}, refuse(http.StatusConflict, "Granting duplicate role %s for user %s", g, n.User)
		}
		roles[g] = true
	}
	for _, r := range n.Revoke {
		if !roles[r] {
			log.Warn("attempted to revoke a ungranted role for a user", "user-name", n.User, "role-name", r)
			return User{}, refuse(http.StatusConflict, "Revoking ungranted role %s for user %s", r, n.User)
		}
		delete(roles, r)
	}
	out.Roles = sortedKeys(roles)
	return out, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DeleteUser removes a user (not root while auth is on).
func (s *Store) DeleteUser(name string) error {
	if name == RootUser && s.Enabled() {
		return refuse(http.StatusForbidden, "Cannot delete root user while auth is enabled.")
	}
	if err := s.remove("/users/" + name); err != nil {
		if isCode(err, v2store.EcodeKeyNotFound) {
			return refuse(http.StatusNotFound, "User %s does not exist", name)
		}
		return err
	}
	s.log.Info("deleted a user", "user-name", name)
	return nil
}

// CheckPassword says whether password is u's.
func CheckPassword(u User, password string) bool {
	return bcrypt.CompareHashAndPassword([]byte(u.Password), []byte(password)) == nil
}

// Roles names every role, root included, sorted.
func (s *Store) Roles() ([]string, error) {
	names, err := s.list("/roles")
	if err != nil {
		return nil, err
	}
	names = append(names, RootRole)
	sort.Strings(names)
	return names, nil
}

// Role is a role as stored (root is built in).
func (s *Store) Role(name string) (Role, error) { return s.role(name, false) }

func (s *Store) role(name string, quorum bool) (Role, error) {
	if name == RootRole {
		return rootRole, nil
	}
	ev, err := s.read("/roles/"+name, quorum)
	if isCode(err, v2store.EcodeKeyNotFound) {
		return Role{}, refuse(http.StatusNotFound, "Role %s does not exist.", name)
	}
	if err != nil {
		return Role{}, err
	}
	var r Role
	if ev.Node.Value == nil {
		return Role{}, fmt.Errorf("role %s: a directory, not a value", name)
	}
	if err := json.Unmarshal([]byte(*ev.Node.Value), &r); err != nil {
		return Role{}, fmt.Errorf("role %s: %w", name, err)
	}
	return r, nil
}

// CreateRole creates r (not root).
func (s *Store) CreateRole(r Role) error {
	if r.Role == RootRole {
		return refuse(http.StatusForbidden, "Cannot modify role %s: is root role.", r.Role)
	}
	if err := s.put("/roles/"+r.Role, r, false); err != nil {
		if isCode(err, v2store.EcodeNodeExist) {
			return refuse(http.StatusConflict, "Role %s already exists.", r.Role)
		}
		return err
	}
	s.log.Info("created a new role", "role-name", r.Role)
	return nil
}

// DeleteRole removes a role (not root).
func (s *Store) DeleteRole(name string) error {
	if name == RootRole {
		return refuse(http.StatusForbidden, "Cannot modify role %s: is root role.", name)
	}
	if err := s.remove("/roles/" + name); err != nil {
		if isCode(err, v2store.EcodeKeyNotFound) {
			return refuse(http.StatusNotFound, "Role %s doesn't exist.", name)
		}
		return err
	}
	s.log.Info("deleted a role", "role-name", name)
	return nil
}

// UpdateRole applies r's grants and revocations to an existing role.
func (s *Store) UpdateRole(r Role) (Role, error) {
	if r.Role == RootRole {
		return Role{}, refuse(http.StatusForbidden, "Cannot modify role %s: is root role.", r.Role)
	}
	old, err := s.role(r.Role, true)
	if err != nil {
		var ae Error
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return r, refuse(http.StatusNotFound, "Role %s doesn't exist.", r.Role)
		}
		return old, err
	}
	next := Role{Role: old.Role}
	if next.Permissions.KV, err = old.Permissions.KV.grant(r.Grant); err != nil {
		return old, err
	}
	next.Permissions.KV = next.Permissions.KV.revoke(s.log, r.Revoke)
	if reflect.DeepEqual(old, next) {
		return old, refuse(http.StatusBadRequest, "Role not updated. Use grant/revoke to update the role.")
	}
	if err := s.put("/roles/"+r.Role, next, true); err != nil {
		return next, err
	}
	s.log.Info("updated a role", "role-name", r.Role)
	return next, nil
}

func (rw RWPermission) grant(n *Permissions) (RWPermission, error) {
	if n == nil {
		return rw, nil
	}
	read, err := addAll(rw.Read, n.KV.Read, "read")
	if err != nil {
		return rw, err
	}
	write, err := addAll(rw.Write, n.KV.Write, "write")
	if err != nil {
		return rw, err
	}
	return RWPermission{Read: read, Write: write}, nil
}

func addAll(have, add []string, kind string) ([]string, error) {
	set := map[string]bool{}
	for _, p := range have {
		set[p] = true
	}
	for _, p := range add {
		if set[p] {
			return nil, refuse(http.StatusConflict, "Granting duplicate %s permission %s", kind, p)
		}
		set[p] = true
	}
	return sortedKeys(set), nil
}

func (rw RWPermission) revoke(log *slog.Logger, n *Permissions) RWPermission {
	if n == nil {
		return rw
	}
	return RWPermission{Read: dropAll(log, rw.Read, n.KV.Read, "read"), Write: dropAll(log, rw.Write, n.KV.Write, "write")}
}

func dropAll(log *slog.Logger, have, drop []string, kind string) []string {
	set := map[string]bool{}
	for _, p := range have {
		set[p] = true
	}
	for _, p := range drop {
		if !set[p] {
			log.Info("revoking ungranted "+kind+" permission", kind+"-permission", p)
			continue
		}
		delete(set, p)
	}
	return sortedKeys(set)
}

// HasKeyAccess says whether the role may read (write: write) key: a pattern ending in * matches
// by prefix, any other the key alone.
func (r Role) HasKeyAccess(key string, write bool) bool {
	if r.Role == RootRole {
		return true
	}
	for _, p := range r.Permissions.KV.list(write) {
		if p != "" && (p[len(p)-1] == '*' && len(key) >= len(p)-1 && key[:len(p)-1] == p[:len(p)-1] || key == p) {
			return true
		}
	}
	return false
}

// HasRecursiveAccess says whether the role may read (write) everything under key: only a
// prefix pattern covers a recursive request.
func (r Role) HasRecursiveAccess(key string, write bool) bool {
	if r.Role == RootRole {
		return true
	}
	for _, p := range r.Permissions.KV.list(write) {
		if p != "" && p[len(p)-1] == '*' && len(key) >= len(p)-1 && key[:len(p)-1] == p[:len(p)-1] {
			return true
		}
	}
	return false
}

func (rw RWPermission) list(write bool) []string {
	if write {
		return rw.Write
	}
	return rw.Read
}
