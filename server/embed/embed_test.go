package embed

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func freeURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("http://%s", l.Addr())
}

// A program embeds a member, talks to it with the real client, closes it and opens it again.
func TestEmbeddedMemberRoundTrip(t *testing.T) {
	cfg := NewConfig()
	cfg.Name = "embedded"
	cfg.Dir = filepath.Join(t.TempDir(), "data")
	client, peer := freeURL(t), freeURL(t)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []string{client}, []string{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []string{peer}, []string{peer}
	cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	start := func() *Etcd {
		e, err := StartEtcd(cfg)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(10 * time.Second):
			t.Fatal("embedded member not ready")
		}
		return e
	}
	e := start()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	e.Close()

	// The same config on the same data dir restarts with the data.
	e = start()
	defer e.Close()
	c, err = clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Get(ctx, "k")
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Fatalf("after restart: %+v %v", r, err)
	}
	// A second member on the same data dir is refused while the first holds it.
	c2 := NewConfig()
	c2.Name, c2.Dir, c2.InitialCluster, c2.Logger = "x", cfg.Dir, "x="+peer, cfg.Logger
	c2.ListenClientUrls, c2.AdvertiseClientUrls = []string{freeURL(t)}, []string{"http://127.0.0.1:1"}
	c2.ListenPeerUrls, c2.AdvertisePeerUrls = []string{freeURL(t)}, []string{peer}
	if e2, err := StartEtcd(c2); err == nil || !strings.Contains(err.Error(), "lock") {
		if e2 != nil {
			e2.Close()
		}
		t.Fatalf("a second member on a data dir in use: %v", err)
	}
}

func TestMemberLocalAddr(t *testing.T) {
	cases := []struct {
		urls []string
		want string
	}{
		{nil, ""},
		{[]string{"http://127.0.0.1:2380", "http://localhost:2380"}, ""},
		{[]string{"http://0.0.0.0:2380"}, ""},
		{[]string{"http://127.0.0.1:2380", "https://10.0.0.7:2380", "http://10.0.0.8:2380"}, "10.0.0.7"},
		{[]string{"http://[2001:db8::1]:2380"}, "2001:db8::1"},
		{[]string{"unix://localhost:2380", "http://node1.example:2380"}, ""},
	}
	for _, c := range cases {
		if got := memberLocalAddr(c.urls); got != c.want {
			t.Errorf("memberLocalAddr(%v) = %q, want %q", c.urls, got, c.want)
		}
	}
}
