package auth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"golang.org/x/crypto/bcrypt"

	"etcdx/server/schema"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func applied(uint64) <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// update runs f in one bbolt write transaction, as the apply loop's batch would.
func update(t *testing.T, db *bolt.DB, f func(w schema.Writer) error) error {
	t.Helper()
	var ferr error
	if err := db.Update(func(tx *bolt.Tx) error { ferr = f(schema.TxWriter(tx)); return nil }); err != nil {
		t.Fatal(err)
	}
	return ferr
}

// The replicated requests change the buckets and the copy in memory alike, with upstream's
// refusals, and the revision moves with every change.
func TestStoreAppliesUpstreamRules(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := NewStore(schema.AuthState{Users: map[string]*authpb.User{}, Roles: map[string]*authpb.Role{}},
		newSimpleTokens(time.Minute, applied, quiet), bcrypt.MinCost, quiet)
	defer s.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	refused := func(err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Fatalf("got %v, want %v", err, want)
		}
	}
	must(update(t, db, s.InitRevision))
	if s.Revision() != 1 {
		t.Fatalf("first revision %d, want 1", s.Revision())
	}
	hash, err := s.HashPassword("pw")
	must(err)
	w := func(f func(w schema.Writer) error) error { return update(t, db, f) }
	refused(w(func(w schema.Writer) error { _, err := s.ApplyEnable(w); return err }), ErrRootUserNotExist)
	must(w(func(w schema.Writer) error {
		_, err := s.ApplyUserAdd(w, &pb.AuthUserAddRequest{Name: "root", HashedPassword: hash})
		return err
	}))
	refused(w(func(w schema.Writer) error { _, err := s.ApplyEnable(w); return err }), ErrRootRoleNotExist)
	// The root role can be granted before it exists.
	must(w(func(w schema.Writer) error {
		_, err := s.ApplyUserGrantRole(w, &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"})
		return err
	}))
	must(w(func(w schema.Writer) error { _, err := s.ApplyEnable(w); return err }))
	if !s.Enabled() || s.Revision() != 3 {
		t.Fatalf("enabled %v at revision %d, want true at 3 (enabling does not move it)", s.Enabled(), s.Revision())
	}
	refused(w(func(w schema.Writer) error {
		_, err := s.ApplyUserRevokeRole(w, &pb.AuthUserRevokeRoleRequest{Name: "root", Role: "root"})
		return err
	}), ErrInvalidAuthMgmt)
	refused(w(func(w schema.Writer) error {
		_, err := s.ApplyUserDelete(w, &pb.AuthUserDeleteRequest{Name: "root"})
		return err
	}), ErrInvalidAuthMgmt)
	refused(w(func(w schema.Writer) error { _, err := s.ApplyRoleAdd(w, &pb.AuthRoleAddRequest{}); return err }), ErrRoleEmpty)
	must(w(func(w schema.Writer) error {
		_, err := s.ApplyRoleAdd(w, &pb.AuthRoleAddRequest{Name: "r"})
		return err
	}))
	refused(w(func(w schema.Writer) error {
		_, err := s.ApplyRoleAdd(w, &pb.AuthRoleAddRequest{Name: "r"})
		return err
	}), ErrRoleAlreadyExist)
	refused(w(func(w schema.Writer) error {
		_, err := s.ApplyRoleGrantPermission(w, &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: &authpb.Permission{Key: []byte("b"), RangeEnd: []byte("a")}})
		return err
	}), ErrInvalidAuthMgmt)
	must(w(func(w schema.Writer) error {
		_, err := s.ApplyRoleGrantPermission(w, &pb.AuthRoleGrantPermissionRequest{Name: "r", Perm: &authpb.Permission{PermType: authpb.READ, Key: []byte("k")}})
		return err
	}))
	must(w(func(w schema.Writer) error {
		_, err := s.ApplyUserAdd(w, &pb.AuthUserAddRequest{Name: "u", Options: &authpb.UserAddOptions{NoPassword: true}})
		return err
	}))
	must(w(func(w schema.Writer) error {
		_, err := s.ApplyUserGrantRole(w, &pb.AuthUserGrantRoleRequest{User: "u", Role: "r"})
		return err
	}))
	rev := s.Revision()
	in := &Info{Username: "u", Revision: rev}
	if err := s.IsRangePermitted(in, []byte("k"), nil); err != nil {
		t.Fatalf("u reading k: %v", err)
	}
	refused(s.IsPutPermitted(in, []byte("k")), ErrPermissionDenied)
	refused(s.IsRangePermitted(&Info{Username: "u", Revision: rev - 1}, []byte("k"), nil), ErrAuthOldRevision)
	refused(s.IsRangePermitted(&Info{}, []byte("k"), nil), ErrUserEmpty)
	refused(s.IsAdminPermitted(in), ErrPermissionDenied)
	if err := s.IsAdminPermitted(&Info{Username: "root", Revision: rev}); err != nil {
		t.Fatalf("root is admin: %v", err)
	}
	_, err = s.CheckPassword(context.Background(), "u", "")
	refused(err, ErrNoPasswordUser)
	_, err = s.CheckPassword(context.Background(), "root", "wrong")
	refused(err, ErrAuthFailed)
	if got, err := s.CheckPassword(context.Background(), "root", "pw"); err != nil || got != rev {
		t.Fatalf("root's password: revision %d, %v", got, err)
	}
	// Deleting the role takes it from its users.
	must(w(func(w schema.Writer) error {
		_, err := s.ApplyRoleDelete(w, &pb.AuthRoleDeleteRequest{Role: "r"})
		return err
	}))
	refused(s.IsRangePermitted(&Info{Username: "u", Revision: s.Revision()}, []byte("k"), nil), ErrPermissionDenied)

	// What the buckets hold reads back as the same state.
	var st schema.AuthState
	must(db.View(func(tx *bolt.Tx) error { st, err = schema.ReadAuth(tx); return err }))
	if !st.Enabled || st.Revision != s.Revision() || len(st.Users) != 2 || len(st.Roles) != 0 || len(st.Users["u"].Roles) != 0 {
		t.Fatalf("stored state %+v does not match (revision %d)", st, s.Revision())
	}
	if st.Users["root"].Roles[0] != "root" || bcrypt.CompareHashAndPassword(st.Users["root"].Password, []byte("pw")) != nil {
		t.Fatalf("stored root: %+v", st.Users["root"])
	}
}

// A simple token names its user on every member that applied its login, until the user's
// password changes or auth goes off.
func TestSimpleTokens(t *testing.T) {
	tk := newSimpleTokens(time.Minute, applied, quiet)
	tk.Enable()
	defer tk.Disable()
	prefix, err := tk.Prefix()
	if err != nil || len(prefix) != 16 {
		t.Fatalf("prefix %q, %v", prefix, err)
	}
	tok, _ := tk.Assign("alice", 5, 42, prefix)
	if tok != prefix+".42" {
		t.Fatalf("token %q", tok)
	}
	if in, ok := tk.Info(context.Background(), tok, 7); !ok || in.Username != "alice" || in.Revision != 7 {
		t.Fatalf("info %+v %v", in, ok)
	}
	for _, bad := range []string{"", prefix, prefix + ".x", prefix + ".1.2", "other.42"} {
		if _, ok := tk.Info(context.Background(), bad, 7); ok {
			t.Errorf("token %q accepted", bad)
		}
	}
	tk.InvalidateUser("alice")
	if _, ok := tk.Info(context.Background(), tok, 7); ok {
		t.Fatal("token of an invalidated user accepted")
	}
	// A token from an entry this member has not applied waits for it (here: until ctx ends).
	never := newSimpleTokens(time.Minute, func(uint64) <-chan struct{} { return make(chan struct{}) }, quiet)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, ok := never.Info(ctx, prefix+".1", 1); ok {
		t.Fatal("token accepted before its login was applied")
	}
}

func TestTokenOptions(t *testing.T) {
	for _, opts := range []string{"bogus", "simple,ttl=1s", "jwt,sign-method", "jwt,sign-method=RS256", "jwt,sign-method=XX999,priv-key=/nonexistent",
		"jwt,ttl=abc,sign-method=HS256", "jwt,sign-method=HS256,sign-method=HS256"} {
		if _, err := NewTokens(opts, time.Minute, applied, quiet); !errors.Is(err, ErrInvalidAuthOpts) && !errors.Is(err, ErrMissingKey) {
			t.Errorf("%q: got %v, want an invalid-options or missing-key error", opts, err)
		}
	}
	if _, err := NewTokens("simple", time.Minute, applied, quiet); err != nil {
		t.Fatal(err)
	}
}
