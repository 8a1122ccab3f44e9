package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestClientAddr(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
		err  bool
	}{
		{args: []string{"--name", "c1", "--listen-client-urls=http://127.0.0.1:2379,http://127.0.0.2:2379"}, want: "127.0.0.1:2379"},
		{args: []string{"--listen-client-urls", "http://127.0.0.1:4001", "--data-dir", "x"}, want: "127.0.0.1:4001"},
		{args: []string{"--listen-peer-urls", "http://127.0.0.1:2380"}, err: true},
		{args: []string{"--listen-client-urls"}, err: true},
	} {
		got, err := clientAddr(c.args)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("clientAddr(%q) = %q, %v; want %q, error %v", c.args, got, err, c.want, c.err)
		}
	}
}

// The floor answers what the bench asks of a member: /health, and the KV calls through
// upstream's client, with either set of transport options.
func TestServesTheBenchsRequests(t *testing.T) {
	for _, transport := range []string{"default", "ours"} {
		t.Run(transport, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go serve(l, transport)
			resp, err := http.Get("http://" + l.Addr().String() + "/health")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `"health":"true"`) {
				t.Fatalf("/health answered %q", body)
			}
			cl, err := clientv3.New(clientv3.Config{Endpoints: []string{l.Addr().String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			get, err := cl.Get(ctx, "offered/00000007", clientv3.WithSerializable())
			if err != nil {
				t.Fatal(err)
			}
			if len(get.Kvs) != 1 || len(get.Kvs[0].Value) != 256 || get.Header.Revision == 0 {
				t.Fatalf("Range answered %v", get)
			}
			if _, err := cl.Put(ctx, "k", "v"); err != nil {
				t.Fatal(err)
			}
			txn, err := cl.Txn(ctx).If(clientv3.Compare(clientv3.Version("k"), "=", 0)).Then(clientv3.OpPut("k", "v")).Commit()
			if err != nil || !txn.Succeeded {
				t.Fatalf("Txn answered %v, %v", txn, err)
			}
		})
	}
	if err := serve(nil, "fast"); err == nil || !strings.Contains(err.Error(), "want default or ours") {
		t.Errorf("an unknown transport: %v", err)
	}
}
