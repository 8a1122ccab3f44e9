package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestTLSClusterWithCertificateAuth(t *testing.T) {
	certs := NewCerts(t)
	c := NewCluster(t, 3)
	c.UseTLS(certs)
	c.Start()
	cl := c.Client()
	ctx := Ctx(t)
	if _, err := c.Members[0].Client().Put(ctx, "secure", "yes"); err != nil {
		t.Fatal(err)
	}
	r, err := c.Members[2].Client().Get(ctx, "secure")
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("read over TLS through another member: %+v %v", r, err)
	}
	ml, err := cl.MemberList(ctx)
	if err != nil || !strings.HasPrefix(ml.Members[0].PeerURLs[0], "https://") {
		t.Fatalf("member list: %+v %v", ml, err)
	}
	// Leases forwarded to the leader over TLS peer connections.
	g, err := cl.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members {
		if _, err := m.Client().KeepAliveOnce(ctx, g.ID); err != nil {
			t.Fatalf("keep-alive through %s: %v", m.Name, err)
		}
	}
	// The JSON gateway over TLS.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c.Members[0].TLS}}
	resp, err := hc.Post(c.Members[0].ClientURL+"/v3/kv/range", "application/json", strings.NewReader(`{"key":"c2VjdXJl"}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("gateway over TLS: %v %v", resp, err)
	}
	resp.Body.Close()

	// Without a client certificate the connection is refused.
	noCert, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[0].ClientURL}, DialTimeout: 2 * time.Second,
		TLS: certs.ClientTLS(t, false)})
	if err == nil {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = noCert.Get(dctx, "secure")
		cancel()
		noCert.Close()
	}
	if err == nil {
		t.Fatal("a client without a certificate was served despite --client-cert-auth")
	}
	// Plain HTTP to the TLS port gets nothing useful.
	plain := strings.Replace(c.Members[0].ClientURL, "https://", "http://", 1)
	if resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(plain + "/health"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP was served on a TLS listener")
	}
}
