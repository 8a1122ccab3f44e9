package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	epb "go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
	lpb "go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// recipeSession runs upstream's lock and election services through one member, over gRPC and
// the JSON gateway, and returns what a client sees at each step (status codes and texts,
// values, whether a call blocked), without what differs by member (IDs, revisions, lease IDs).
func recipeSession(t *testing.T, m *Member) []string {
	t.Helper()
	conn := m.Client().ActiveConnection()
	lock, elect := lpb.NewLockClient(conn), epb.NewElectionClient(conn)
	var out []string
	note := func(step string, err error, detail string) {
		if err != nil {
			s := status.Convert(err)
			msg := s.Message()
			// A call that outlives its deadline ends with whichever side notices first: the
			// client's own timer ("context deadline exceeded") or the server resetting the stream
			// at the same deadline. Both are the caller's deadline, in either implementation.
			if s.Code() == codes.DeadlineExceeded && strings.Contains(msg, "RST_STREAM") {
				msg = "context deadline exceeded"
			}
			detail = fmt.Sprintf("error %s: %s", s.Code(), msg)
		}
		out = append(out, step+": "+detail)
	}
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(Ctx(t), time.Second) }
	value := func(r *epb.LeaderResponse) string {
		if r == nil || r.Kv == nil {
			return ""
		}
		return string(r.Kv.Value)
	}

	l1, err := lock.Lock(Ctx(t), &lpb.LockRequest{Name: []byte("l1")})
	note("lock l1", err, fmt.Sprintf("key under l1/: %v, header: %v", l1 != nil && strings.HasPrefix(string(l1.GetKey()), "l1/"), l1.GetHeader() != nil))
	ctx, cancel := short()
	_, err = lock.Lock(ctx, &lpb.LockRequest{Name: []byte("l1")})
	cancel()
	note("lock l1 again, held", err, "taken")
	_, err = lock.Unlock(Ctx(t), &lpb.UnlockRequest{Key: l1.GetKey()})
	note("unlock", err, "ok")
	l2, err := lock.Lock(Ctx(t), &lpb.LockRequest{Name: []byte("l1")})
	note("lock l1 after unlock", err, fmt.Sprintf("key under l1/: %v", strings.HasPrefix(string(l2.GetKey()), "l1/")))
	lease, err := m.Client().Grant(Ctx(t), 30)
	if err != nil {
		t.Fatal(err)
	}
	l3, err := lock.Lock(Ctx(t), &lpb.LockRequest{Name: []byte("l3"), Lease: int64(lease.ID)})
	note("lock on a lease", err, fmt.Sprintf("key is l3/<lease>: %v", string(l3.GetKey()) == fmt.Sprintf("l3/%x", lease.ID)))
	_, err = lock.Lock(Ctx(t), &lpb.LockRequest{Name: []byte("l4"), Lease: 12345})
	note("lock on a missing lease", err, "taken")

	_, err = elect.Leader(Ctx(t), &epb.LeaderRequest{Name: []byte("e1")})
	note("leader of an empty election", err, "answered")
	c, err := elect.Campaign(Ctx(t), &epb.CampaignRequest{Name: []byte("e1"), Value: []byte("v1")})
	note("campaign", err, fmt.Sprintf("leader key name %q, key under e1/: %v", c.GetLeader().GetName(), strings.HasPrefix(string(c.GetLeader().GetKey()), "e1/")))
	ld, err := elect.Leader(Ctx(t), &epb.LeaderRequest{Name: []byte("e1")})
	note("leader", err, fmt.Sprintf("value %q", value(ld)))
	obsCtx, obsCancel := context.WithCancel(Ctx(t))
	obs, err := elect.Observe(obsCtx, &epb.LeaderRequest{Name: []byte("e1")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := obs.Recv()
	note("observe, first", err, fmt.Sprintf("value %q", value(first)))
	_, err = elect.Proclaim(Ctx(t), &epb.ProclaimRequest{Leader: c.GetLeader(), Value: []byte("v2")})
	note("proclaim", err, "ok")
	next, err := obs.Recv()
	note("observe, next", err, fmt.Sprintf("value %q", value(next)))
	obsCancel()
	_, err = elect.Proclaim(Ctx(t), &epb.ProclaimRequest{Value: []byte("v3")})
	note("proclaim without a leader key", err, "ok")
	stale := *c.GetLeader()
	stale.Rev++
	_, err = elect.Proclaim(Ctx(t), &epb.ProclaimRequest{Leader: &stale, Value: []byte("v3")})
	note("proclaim with a stale leader key", err, "ok")
	ctx, cancel = short()
	_, err = elect.Campaign(ctx, &epb.CampaignRequest{Name: []byte("e1"), Value: []byte("other")})
	cancel()
	note("second campaigner while led", err, "elected")
	// The server cleans up the timed-out campaigner's key after the caller has its deadline
	// error (in both implementations): wait for that, so what follows does not race it.
	waitKeys(t, m, "e1/", 1)
	_, err = elect.Resign(Ctx(t), &epb.ResignRequest{Leader: c.GetLeader()})
	note("resign", err, "ok")
	_, err = elect.Leader(Ctx(t), &epb.LeaderRequest{Name: []byte("e1")})
	note("leader after resigning", err, "answered")

	// The gateway paths.
	post := func(path, body string) string {
		code, resp := httpDo(t, "POST", m.ClientURL+path, body)
		var v map[string]any
		if err := json.Unmarshal([]byte(resp), &v); err != nil {
			return fmt.Sprintf("%d %s", code, resp)
		}
		delete(v, "header")
		if k, ok := v["key"].(string); ok {
			b, _ := base64.StdEncoding.DecodeString(k)
			v["key"] = strings.SplitN(string(b), "/", 2)[0] + "/..."
		}
		if l, ok := v["leader"].(map[string]any); ok {
			v["leader"] = l["name"]
		}
		if kv, ok := v["kv"].(map[string]any); ok {
			v["kv"] = kv["value"]
		}
		b, _ := json.Marshal(v)
		return fmt.Sprintf("%d %s", code, b)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	out = append(out, "gateway lock: "+post("/v3/lock/lock", `{"name":"`+b64("g1")+`"}`))
	out = append(out, "gateway campaign: "+post("/v3/election/campaign", `{"name":"`+b64("ge")+`","value":"`+b64("gv")+`"}`))
	out = append(out, "gateway leader: "+post("/v3/election/leader", `{"name":"`+b64("ge")+`"}`))
	out = append(out, "gateway leader of none: "+post("/v3/election/leader", `{"name":"`+b64("none")+`"}`))
	out = append(out, "gateway proclaim without leader: "+post("/v3/election/proclaim", `{"value":"`+b64("x")+`"}`))
	return out
}

// TestLockAndElectionServicesAsUpstream: upstream's v3lock and v3election gRPC services, which
// clients such as jetcd call directly, and their gateway paths: the same session gives the same
// answers on ours and on upstream 3.7.3 (a lock blocks while held, keys under the name, leases
// kept; campaign, leader, observe, proclaim, resign and their refusals).
func TestLockAndElectionServicesAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	besideUpstream(t, recipeSession)
}

// authRecipeSession takes locks as alice (read-write under /a/), as nobody, and as root, with
// authentication on, and returns what each got.
func authRecipeSession(t *testing.T, m *Member) []string {
	t.Helper()
	setupAuth(t, userClient(t, []string{m.ClientURL}, "", "", nil))
	var out []string
	for _, c := range []struct{ user, password, name string }{
		{"alice", "alicepw", "/a/lock"}, {"alice", "alicepw", "/b/lock"}, {"", "", "/a/lock2"}, {"root", "rootpw", "/b/lock"},
	} {
		cl := userClient(t, []string{m.ClientURL}, c.user, c.password, nil)
		ctx, cancel := context.WithTimeout(Ctx(t), 3*time.Second)
		r, err := lpb.NewLockClient(cl.ActiveConnection()).Lock(ctx, &lpb.LockRequest{Name: []byte(c.name)})
		cancel()
		got := "locked"
		if err != nil {
			got = status.Convert(err).Message()
		} else if !strings.HasPrefix(string(r.Key), c.name+"/") {
			got = "locked under " + string(r.Key)
		}
		out = append(out, fmt.Sprintf("%q locks %s: %s", c.user, c.name, got))
	}
	return out
}

// TestLockServiceActsAsItsCaller: with authentication on, the lock service reads and writes as
// the caller, so a user locks only where it may write, on ours as on upstream 3.7.3.
func TestLockServiceActsAsItsCaller(t *testing.T) { besideUpstream(t, authRecipeSession) }

// waitKeys waits until n keys are under prefix (a recipe's cleanup that outlives its call),
// watching the prefix for the changes that bring it there.
func waitKeys(t *testing.T, m *Member, prefix string, n int64) {
	t.Helper()
	cli := m.Client()
	ctx, cancel := context.WithTimeout(Ctx(t), 10*time.Second)
	defer cancel()
	for {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatalf("keys under %s: %v", prefix, err)
		}
		if resp.Count == n {
			return
		}
		// Wait for the next change under the prefix, then count again.
		select {
		case <-cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)):
		case <-ctx.Done():
			t.Fatalf("keys under %s: %d, want %d", prefix, resp.Count, n)
		}
	}
}
