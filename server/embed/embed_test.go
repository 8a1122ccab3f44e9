package embed

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
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
	if e2, err := StartEtcd(&Config{Name: "x", Dir: cfg.Dir, ListenClientUrls: []string{freeURL(t)}, AdvertiseClientUrls: []string{"http://127.0.0.1:1"},
		ListenPeerUrls: []string{freeURL(t)}, AdvertisePeerUrls: []string{peer}, InitialCluster: "x=" + peer, InitialClusterState: "new",
		TickMs: 100, ElectionMs: 1000, LogLevel: "error", Logger: cfg.Logger}); err == nil {
		e2.Close()
		t.Fatal("a second member opened a data dir in use")
	}
}
