package apply_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/apply"
	"etcdx/server/auth"
	"etcdx/server/schema"
)

// authState is newState's store with auth on: root, and alice, whose role may read and write
// [a, c) and only read c. Lease 100 holds b (newState); lease 200 holds b and c.
func authState(t *testing.T) (*state, *auth.Store) {
	t.Helper()
	st := newState(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	applied := func(uint64) <-chan struct{} { c := make(chan struct{}); close(c); return c }
	tokens, err := auth.NewTokens("simple", time.Minute, applied, quiet)
	if err != nil {
		t.Fatal(err)
	}
	a := auth.NewStore(schema.AuthState{Users: map[string]*authpb.User{}, Roles: map[string]*authpb.Role{}}, tokens, 4, quiet)
	t.Cleanup(a.Close)
	b := st.be.Batch()
	steps := []func() error{
		func() error {
			_, err := a.ApplyUserAdd(b, &pb.AuthUserAddRequest{Name: "root", Options: &authpb.UserAddOptions{NoPassword: true}})
			return err
		},
		func() error { _, err := a.ApplyRoleAdd(b, &pb.AuthRoleAddRequest{Name: "root"}); return err },
		func() error {
			_, err := a.ApplyUserGrantRole(b, &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"})
			return err
		},
		func() error {
			_, err := a.ApplyUserAdd(b, &pb.AuthUserAddRequest{Name: "alice", Options: &authpb.UserAddOptions{NoPassword: true}})
			return err
		},
		func() error { _, err := a.ApplyRoleAdd(b, &pb.AuthRoleAddRequest{Name: "r"}); return err },
		func() error {
			_, err := a.ApplyRoleGrantPermission(b, &pb.AuthRoleGrantPermissionRequest{Name: "r",
				Perm: &authpb.Permission{PermType: authpb.READWRITE, Key: []byte("a"), RangeEnd: []byte("c")}})
			return err
		},
		func() error {
			_, err := a.ApplyRoleGrantPermission(b, &pb.AuthRoleGrantPermissionRequest{Name: "r",
				Perm: &authpb.Permission{PermType: authpb.READ, Key: []byte("c")}})
			return err
		},
		func() error {
			_, err := a.ApplyUserGrantRole(b, &pb.AuthUserGrantRoleRequest{User: "alice", Role: "r"})
			return err
		},
		func() error { _, err := a.ApplyEnable(b); return err },
		func() error { _, err := st.les.Grant(b, 200, 60); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			b.Unlock()
			t.Fatalf("auth fixture step %d: %v", i, err)
		}
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	st.mustPut("b", "2", 200)
	st.mustPut("c", "6", 200)
	return st, a
}

// Every member checks the caller's rights to a replicated request at apply: one op a caller may
// not make refuses the whole request, in whichever branch of a txn, however deep.
func TestPermittedSemantics(t *testing.T) {
	st, a := authState(t)
	alice := &auth.Info{Username: "alice", Revision: a.Revision()}
	root := &auth.Info{Username: "root", Revision: a.Revision()}
	cmpA := []*pb.Compare{{Key: []byte("a"), Target: pb.Compare_VERSION, Result: pb.Compare_GREATER}}
	for _, tc := range []struct {
		name   string
		in     *auth.Info
		req    *pb.InternalRaftRequest
		denied bool
	}{
		{"a put in alice's range", alice, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("a")}}, false},
		{"a put on a key she may only read", alice, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("c")}}, true},
		{"a put outside every grant", alice, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("z")}}, true},
		{"a put on a lease holding a key she may not write", alice, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("a"), Lease: 200}}, true},
		{"a put on a lease whose keys she may write", alice, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("a"), Lease: 100}}, false},
		{"a put on a lease that does not exist (refused later, on its own terms)", alice, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("a"), Lease: 999}}, false},
		{"a delete of her range with prev_kv", alice, &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("a"), RangeEnd: []byte("c"), PrevKv: true}}, false},
		{"a delete reaching a key she may only read", alice, &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("a"), RangeEnd: []byte("d")}}, true},
		{"a revoke of a lease holding a key she may not write", alice, &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 200}}, true},
		{"a txn reading c and writing a", alice, &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Compare: cmpA, Success: []*pb.RequestOp{rangeOp("c", 0), putOp("a", "v", 0)}}}, false},
		{"a txn whose failure branch (which would not run) writes c", alice, &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Compare: cmpA, Success: []*pb.RequestOp{putOp("a", "v", 0)}, Failure: []*pb.RequestOp{putOp("c", "v", 0)}}}, true},
		{"a txn comparing a key outside every grant", alice, &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Compare: []*pb.Compare{{Key: []byte("z"), Target: pb.Compare_VERSION}}}}, true},
		{"a nested txn's third op writes c", alice, &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "v", 0), rangeOp("b", 0), putOp("c", "v", 0)}}}}}}}, true},
		{"root writes c", root, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("c"), Lease: 200}}, false},
		{"root revokes lease 200", root, &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 200}}, false},
		{"no caller named", &auth.Info{}, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("a")}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := apply.Permitted(a, st.les, tc.in, tc.req)
			if tc.denied != (err != nil) {
				t.Fatalf("Permitted = %v, want denied=%v", err, tc.denied)
			}
			if err != nil && !errors.Is(err, auth.ErrPermissionDenied) && !errors.Is(err, auth.ErrUserEmpty) {
				t.Fatalf("refused with %v, want a permission error", err)
			}
		})
	}
	// With auth off, nobody is refused anything.
	b := st.be.Batch()
	if _, err := a.ApplyDisable(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := apply.Permitted(a, st.les, &auth.Info{}, &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 200}}); err != nil {
		t.Fatalf("auth off: %v", err)
	}
	if err := apply.Permitted(a, st.les, alice, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("z")}}); err != nil {
		t.Fatalf("auth off: %v", err)
	}
}
