package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestClientPortServesHTTPAndHTTPS: one port named both http:// and https:// in
// --listen-client-urls (upstream's e2e ClientTLSAndNonTLS clusters do it) serves both, gRPC and
// HTTP each, the connection's first byte telling TLS from plain.
func TestClientPortServesHTTPAndHTTPS(t *testing.T) {
	certs := NewCerts(t)
	m := NewMember(t)
	secureURL := strings.Replace(m.ClientURL, "http://", "https://", 1)
	m.Extra = append(m.Extra, "--listen-client-urls", m.ClientURL+","+secureURL,
		"--cert-file", certs.ServerCert, "--key-file", certs.ServerKey, "--trusted-ca-file", certs.CA)
	m.Start()
	ctx := Ctx(t)
	if _, err := m.Client().Put(ctx, "k", "plain"); err != nil {
		t.Fatalf("gRPC without TLS: %v", err)
	}
	tc, err := clientv3.New(clientv3.Config{Endpoints: []string{secureURL}, DialTimeout: 5 * time.Second, TLS: certs.ClientTLS(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if r, err := tc.Get(ctx, "k"); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "plain" {
		t.Fatalf("gRPC over TLS on the same port: %v %v", r, err)
	}
	for _, c := range []struct {
		url    string
		client *http.Client
	}{
		{m.ClientURL, http.DefaultClient},
		{secureURL, &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientTLS(t, true)}}},
	} {
		resp, err := c.client.Get(c.url + "/version")
		if err != nil {
			t.Fatalf("GET %s/version: %v", c.url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "etcdserver") {
			t.Fatalf("GET %s/version: %d %s", c.url, resp.StatusCode, body)
		}
	}
}

// debugVarsKeys is the set of top-level keys of a member's /debug/vars and what a POST gets.
func debugVarsKeys(t *testing.T, m *Member) []string {
	resp, err := http.Get(m.ClientURL + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var vars map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		t.Fatalf("/debug/vars: %v", err)
	}
	var keys []string
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	post, err := http.Post(m.ClientURL+"/debug/vars", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	return append(keys, "POST: "+post.Status+" Allow: "+post.Header.Get("Allow"))
}

// TestDebugVarsAsUpstream: /debug/vars on the client port is JSON with the same variables as
// upstream 3.7.3's (the command line, memstats, the file descriptor limit, raft's status), and
// refuses other methods as upstream does.
func TestDebugVarsAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	besideUpstream(t, debugVarsKeys)
}
