package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// userClient connects to eps as user (no user: anonymous).
func userClient(t *testing.T, eps []string, user, password string, tc *tls.Config) *clientv3.Client {
	t.Helper()
	cl, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		Username: user, Password: password, TLS: tc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// setupAuth, through an anonymous client, makes root (password rootpw), alice (alicepw) with
// role r1: read and write under /a/, read /r; then turns auth on.
func setupAuth(t *testing.T, cl *clientv3.Client) {
	t.Helper()
	ctx := Ctx(t)
	steps := []func() error{
		func() error { _, err := cl.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := cl.RoleAdd(ctx, "root"); return err },
		func() error { _, err := cl.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cl.UserAdd(ctx, "alice", "alicepw"); return err },
		func() error { _, err := cl.RoleAdd(ctx, "r1"); return err },
		func() error {
			_, err := cl.RoleGrantPermission(ctx, "r1", "/a/", clientv3.GetPrefixRangeEnd("/a/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error {
			_, err := cl.RoleGrantPermission(ctx, "r1", "/r", "", clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := cl.UserGrantRole(ctx, "alice", "r1"); return err },
		func() error { _, err := cl.AuthEnable(ctx); return err },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("auth setup step %d: %v", i, err)
		}
	}
}

func requireErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(rpctypes.Error(err), rpctypes.Error(want)) {
		t.Errorf("%s: got %v, want %v", what, err, want)
	}
}

func requireOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// Every service refuses what alice may not do, with upstream's errors, and lets root do it;
// upstream 3.6.16 answers the same.
func TestAuthPermissionsPerService(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, impl := range []string{"upstream", "ours"} {
		t.Run(impl, func(t *testing.T) {
			c := NewCluster(t, 1)
			if impl == "upstream" {
				c.Members[0].Bin = UpstreamBinary(t, "etcd")
			}
			c.Start()
			checkPermissionsPerService(t, c)
		})
	}
}

func checkPermissionsPerService(t *testing.T, c *Cluster) {
	m := c.Members[0]
	eps := c.Endpoints()
	setupAuth(t, userClient(t, eps, "", "", nil))
	root := userClient(t, eps, "root", "rootpw", nil)
	alice := userClient(t, eps, "alice", "alicepw", nil)
	anon := userClient(t, eps, "", "", nil)
	ctx := Ctx(t)
	denied := rpctypes.ErrGRPCPermissionDenied

	// KV.
	_, err := alice.Put(ctx, "/a/1", "v")
	requireOK(t, "put in /a/", err)
	_, err = alice.Put(ctx, "/a/1", "w", clientv3.WithPrevKV())
	requireOK(t, "put with prev-kv in /a/", err)
	_, err = alice.Put(ctx, "/x", "v")
	requireErr(t, "put /x", err, denied)
	_, err = alice.Put(ctx, "/r", "v")
	requireErr(t, "put read-only /r", err, denied)
	_, err = alice.Get(ctx, "/a/", clientv3.WithPrefix())
	requireOK(t, "get /a/ prefix", err)
	_, err = alice.Get(ctx, "/r")
	requireOK(t, "get /r", err)
	_, err = alice.Get(ctx, "/", clientv3.WithPrefix())
	requireErr(t, "get / prefix", err, denied)
	_, err = alice.Delete(ctx, "/x")
	requireErr(t, "delete /x", err, denied)
	_, err = alice.Delete(ctx, "/a/", clientv3.WithPrefix())
	requireOK(t, "delete /a/ prefix", err)
	_, err = alice.Txn(ctx).If(clientv3.Compare(clientv3.Value("/x"), "=", "v")).Then(clientv3.OpGet("/a/1")).Commit()
	requireErr(t, "read-only txn comparing /x", err, denied)
	_, err = alice.Txn(ctx).If(clientv3.Compare(clientv3.Value("/a/1"), "=", "nope")).
		Then(clientv3.OpPut("/a/2", "v")).Else(clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut("/x", "v")}, nil)).Commit()
	requireErr(t, "txn with a nested put to /x in the branch not taken", err, denied)
	_, err = alice.Txn(ctx).Then(clientv3.OpPut("/a/3", "v"), clientv3.OpGet("/r")).Commit()
	requireOK(t, "txn within permissions", err)
	_, err = alice.Compact(ctx, 1)
	requireErr(t, "compact", err, denied)
	_, err = anon.Get(ctx, "/a/1")
	requireErr(t, "anonymous get", err, rpctypes.ErrGRPCUserEmpty)
	_, err = anon.Put(ctx, "/a/1", "v")
	requireErr(t, "anonymous put", err, rpctypes.ErrGRPCUserEmpty)

	// Watch: a watch outside the permissions is cancelled at once; one inside sees events.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	wr, ok := <-alice.Watch(wctx, "/x")
	if !ok || !wr.Canceled || !strings.Contains(wr.Err().Error(), "permission denied") {
		t.Errorf("watch /x: %+v (open %v), err %v", wr, ok, wr.Err())
	}
	wc := alice.Watch(wctx, "/a/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	<-wc
	if _, err := root.Put(ctx, "/a/w", "seen"); err != nil {
		t.Fatal(err)
	}
	if wr := <-wc; len(wr.Events) != 1 || string(wr.Events[0].Kv.Value) != "seen" {
		t.Errorf("watch /a/: %+v, %v", wr, wr.Err())
	}

	// Lease: keys of a lease bind its use to permissions on them.
	lease, err := root.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Put(ctx, "/x", "v", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	_, err = alice.Revoke(ctx, lease.ID)
	requireErr(t, "revoke a lease holding /x", err, denied)
	_, err = alice.TimeToLive(ctx, lease.ID, clientv3.WithAttachedKeys())
	requireErr(t, "time-to-live with keys of a lease holding /x", err, denied)
	_, err = alice.TimeToLive(ctx, lease.ID)
	requireOK(t, "time-to-live without keys", err)
	_, err = alice.Leases(ctx)
	requireErr(t, "list leases", err, denied)
	_, err = alice.KeepAliveOnce(ctx, lease.ID)
	requireErr(t, "keep a lease holding /x alive", err, denied)
	_, err = alice.Put(ctx, "/a/leased", "v", clientv3.WithLease(lease.ID))
	requireErr(t, "attach to a lease holding /x", err, denied)
	own, err := alice.Grant(ctx, 60)
	requireOK(t, "grant", err)
	if err == nil {
		_, err = alice.Put(ctx, "/a/leased", "v", clientv3.WithLease(own.ID))
		requireOK(t, "put on own lease", err)
		_, err = alice.KeepAliveOnce(ctx, own.ID)
		requireOK(t, "keep own lease alive", err)
		_, err = alice.Revoke(ctx, own.ID)
		requireOK(t, "revoke own lease", err)
	}
	_, err = anon.Grant(ctx, 60)
	requireErr(t, "anonymous grant", err, rpctypes.ErrGRPCUserEmpty)

	// Maintenance and cluster: reading status and members needs a user, changes need root.
	_, err = alice.Status(ctx, m.ClientURL)
	requireOK(t, "status", err)
	_, err = anon.Status(ctx, m.ClientURL)
	requireErr(t, "anonymous status", err, rpctypes.ErrGRPCUserEmpty)
	_, err = alice.MemberList(ctx)
	requireOK(t, "member list", err)
	_, err = alice.AlarmList(ctx)
	requireOK(t, "alarm list", err)
	_, err = alice.Defragment(ctx, m.ClientURL)
	requireErr(t, "defragment", err, denied)
	_, err = alice.HashKV(ctx, m.ClientURL, 0)
	requireErr(t, "hashkv", err, denied)
	_, err = alice.MoveLeader(ctx, 1)
	requireErr(t, "move-leader", err, denied)
	_, err = alice.Downgrade(ctx, clientv3.DowngradeValidate, "3.5.0")
	requireErr(t, "downgrade", err, denied)
	_, err = alice.MemberAdd(ctx, []string{"http://127.0.0.1:1"})
	requireErr(t, "member add", err, denied)
	rc, err := alice.Snapshot(ctx)
	if err == nil {
		_, err = io.Copy(io.Discard, rc)
	}
	requireErr(t, "snapshot", err, denied)
	_, err = alice.UserList(ctx)
	requireErr(t, "user list", err, denied)
	_, err = alice.UserGet(ctx, "alice")
	requireOK(t, "user get of oneself", err)
	_, err = alice.RoleGet(ctx, "r1")
	requireOK(t, "role get of an own role", err)
	_, err = alice.RoleGet(ctx, "root")
	requireErr(t, "role get of another role", err, denied)

	// Root may do all of it.
	_, err = root.Get(ctx, "/", clientv3.WithPrefix())
	requireOK(t, "root get", err)
	_, err = root.Leases(ctx)
	requireOK(t, "root lease list", err)
	_, err = root.HashKV(ctx, m.ClientURL, 0)
	requireOK(t, "root hashkv", err)
	_, err = root.Defragment(ctx, m.ClientURL)
	requireOK(t, "root defragment", err)
	_, err = root.Compact(ctx, 2)
	requireOK(t, "root compact", err)
	rc, err = root.Snapshot(ctx)
	if err == nil {
		_, err = io.Copy(io.Discard, rc)
	}
	requireOK(t, "root snapshot", err)

	// A token the member never issued.
	conn, err := grpc.NewClient(strings.TrimPrefix(m.ClientURL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tok, err := pb.NewAuthClient(conn).Authenticate(ctx, &pb.AuthenticateRequest{Name: "alice", Password: "alicepw"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pb.NewMaintenanceClient(conn).Alarm(metadata.AppendToOutgoingContext(ctx, "token", tok.Token),
		&pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE, Alarm: pb.AlarmType_NOSPACE})
	requireErr(t, "alarm deactivate", err, denied)
	_, err = pb.NewKVClient(conn).Range(metadata.AppendToOutgoingContext(ctx, "token", "bogus.1"), &pb.RangeRequest{Key: []byte("/a/1")})
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "invalid auth token") {
		t.Errorf("bogus token: %v", err)
	}
	// /health stays healthy with auth on.
	if err := m.WaitHealthy(5 * time.Second); err != nil {
		t.Errorf("health with auth on: %v", err)
	}
}
