package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestGRPCProxyAsUpstream: `etcd grpc-proxy start` of ours and of upstream 3.7.3, in front of
// the same member, give a client the same answers: writes and reads, a transaction, a watch's
// events, a range at a compacted revision refused with the same error, and a call refused for
// want of permission once auth is on (the token goes through the proxy).
func TestGRPCProxyAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	m := NewMember(t)
	m.Start()
	answers := map[string][]string{}
	addrs := map[string]string{}
	for _, side := range []string{"upstream", "ours"} {
		bin := map[string]string{"ours": ServerAt(t, CurrentLevel), "upstream": UpstreamBinaryAt(t, Upstream37Version, "etcd")}[side]
		addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		p := StartCtl(t, bin, nil, "grpc-proxy", "start", "--endpoints="+m.ClientURL, "--listen-addr="+addr, "--advertise-client-url="+addr)
		p.WaitOutput("started gRPC proxy", 10*time.Second)
		addrs[side] = addr
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
		key := side + "/k"
		wch := c.Watch(Ctx(t), key)
		for i := range 3 {
			if _, err := c.Put(Ctx(t), key, fmt.Sprint(i)); err != nil {
				t.Fatalf("%s: put: %v", side, err)
			}
		}
		for i := 0; i < 3; {
			wr := <-wch
			for _, ev := range wr.Events {
				note("watch %s %s=%s v%d", ev.Type, strings.TrimPrefix(string(ev.Kv.Key), side), ev.Kv.Value, ev.Kv.Version)
				i++
			}
		}
		g, err := c.Get(Ctx(t), key)
		note("get %v %d %s", err, g.Count, g.Kvs[0].Value)
		tr, err := c.Txn(Ctx(t)).If(clientv3.Compare(clientv3.Value(key), "=", "2")).Then(clientv3.OpGet(key)).Commit()
		note("txn %v %v", err, tr.Succeeded)
		if _, err := c.Compact(Ctx(t), g.Header.Revision); err != nil {
			t.Fatal(err)
		}
		_, err = c.Get(Ctx(t), key, clientv3.WithRev(g.Header.Revision-1))
		note("compacted %v", err)
		answers[side] = out
		c.Close()
	}
	// Auth on: the proxies pass the caller's token, and the member's refusals, through.
	admin := m.Client()
	if _, err := admin.UserAdd(Ctx(t), "root", "rootpw"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UserGrantRole(Ctx(t), "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AuthEnable(Ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"upstream", "ours"} {
		for _, user := range []string{"root", ""} {
			cfg := clientv3.Config{Endpoints: []string{addrs[side]}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
			if user != "" {
				cfg.Username, cfg.Password = user, "rootpw"
			}
			c, err := clientv3.New(cfg)
			if err == nil {
				_, err = c.Put(Ctx(t), "authed", "1")
				c.Close()
			}
			answers[side] = append(answers[side], fmt.Sprintf("put as %q: %v", user, err))
		}
	}
	if fmt.Sprint(answers["ours"]) != fmt.Sprint(answers["upstream"]) {
		t.Fatalf("through the proxies:\nupstream %q\nours     %q", answers["upstream"], answers["ours"])
	}
}
