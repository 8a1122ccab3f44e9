package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestGatewayProxiesAndFailsOver: `etcd gateway start` of ours and of upstream 3.7.3, each in
// front of the same three members, logs upstream's ready line, carries a put, and with one
// member stopped still carries every new client's put (an endpoint that refuses is left out).
func TestGatewayProxiesAndFailsOver(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	c.Start()
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	gateways := map[string]string{}
	for side, bin := range map[string]string{"ours": ServerAt(t, CurrentLevel), "upstream": UpstreamBinaryAt(t, Upstream37Version, "etcd")} {
		addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		p := StartCtl(t, bin, nil, "gateway", "start", "--endpoints="+strings.Join(eps, ","), "--listen-addr="+addr)
		p.WaitOutput("ready to proxy client requests", 10*time.Second)
		gateways[side] = addr
	}
	put := func(side, key string) error {
		cl, err := clientv3.New(clientv3.Config{Endpoints: []string{gateways[side]}, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer cl.Close()
		_, err = cl.Put(Ctx(t), key, side)
		return err
	}
	for side := range gateways {
		if err := put(side, "first"); err != nil {
			t.Fatalf("%s gateway: %v", side, err)
		}
	}
	c.Members[0].Stop()
	for side := range gateways {
		for i := range 6 {
			if err := put(side, fmt.Sprintf("after-%d", i)); err != nil {
				t.Errorf("%s gateway, a member down, put %d: %v", side, i, err)
			}
		}
	}
}

// TestGatewayJSONIsCompact: the /v3 JSON gateway answers without spaces at every level, as
// upstream 3.5.35's and 3.7.3's (protojson would add some depending on the binary; upstream
// 3.5's own tests match the compact bytes).
func TestGatewayJSONIsCompact(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, level := range []string{CurrentLevel, LastReleaseLevel, OldestLevel} {
		m := NewMember(t)
		m.Bin = ServerAt(t, level)
		m.Start()
		for _, req := range []struct{ path, body string }{
			{"/v3/kv/put", `{"key":"Zm9v","value":"YmFy"}`},
			{"/v3/kv/txn", `{"compare":[{"target":"CREATE","key":"Zm9v","createRevision":"0"}],"success":[{"requestPut":{"key":"Zm9v","value":"YmFy"}}]}`},
			{"/v3/kv/range", `{"key":"Zm9v"}`},
		} {
			resp, err := http.Post(m.ClientURL+req.path, "application/json", strings.NewReader(req.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || bytes.ContainsAny(b, " \t") {
				t.Errorf("level %s %s: %d %s", level, req.path, resp.StatusCode, b)
			}
		}
		m.Stop()
	}
}

// TestGatewayErrorsAsUpstream: a failed call through the /v3 JSON gateway answers with the same
// status and body as upstream's release of the level: {"error","code","message"} at 3.5 (its v1
// gateway), {"code","message"} from 3.6.
func TestGatewayErrorsAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	calls := []struct{ path, body string }{
		{"/v3/kv/txn", `{"compare":[{"result":0,"target":1,"key":"Zm9v","TargetUnion":null}],"success":[{"Request":{"RequestPut":{"key":"Zm9v","value":"YmFy"}}}]}`},
		{"/v3/kv/range", `{"key":"Zm9v","revision":"99"}`},
		{"/v3/kv/range", `garbage`},
	}
	answers := func(bin string) []string {
		m := NewMember(t)
		m.Bin = bin
		m.Start()
		defer m.Stop()
		var out []string
		for _, c := range calls {
			resp, err := http.Post(m.ClientURL+c.path, "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out = append(out, fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b)))
		}
		return out
	}
	for level, upstream := range map[string]string{OldestLevel: Upstream35Version, CurrentLevel: Upstream37Version} {
		up, ours := answers(UpstreamBinaryAt(t, upstream, "etcd")), answers(ServerAt(t, level))
		for i := range up {
			if up[i] != ours[i] {
				t.Errorf("level %s %s: upstream %s, ours %s", level, calls[i].path, up[i], ours[i])
			}
		}
	}
}
