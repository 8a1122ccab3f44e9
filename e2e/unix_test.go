package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestUnixSocketCluster runs three members that talk to clients and to each other over unix
// sockets (upstream's unix://name:port URLs, the socket file "name:port" in the member's
// working directory), and survives a member's restart, which finds its old socket file.
func TestUnixSocketCluster(t *testing.T) {
	dir := t.TempDir()
	c := NewCluster(t, 3)
	var ic []string
	for _, m := range c.Members {
		m.WorkDir = dir
		m.ClientURL = fmt.Sprintf("unix://localhost:%d", FreePort(t))
		m.PeerURL = fmt.Sprintf("unix://localhost:%d", FreePort(t))
		ic = append(ic, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		m.InitialCluster = strings.Join(ic, ",")
	}
	c.Start()
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, "unix://"+filepath.Join(dir, strings.TrimPrefix(m.ClientURL, "unix://")))
	}
	cl, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	ml, err := cl.MemberList(Ctx(t))
	if err != nil || len(ml.Members) != 3 || !strings.HasPrefix(ml.Members[0].PeerURLs[0], "unix://") {
		t.Fatalf("members: %+v %v", ml, err)
	}
	m := c.Members[1]
	m.Kill() // leaves its socket files behind
	if _, err := os.Stat(filepath.Join(dir, strings.TrimPrefix(m.PeerURL, "unix://"))); err != nil {
		t.Fatalf("socket file after kill: %v", err)
	}
	m.Start()
	if _, err := cl.Put(Ctx(t), "k2", "v"); err != nil {
		t.Fatal(err)
	}
	// A serializable read may reach a member that has not applied k2 yet; read the
	// restarted member itself until it has caught up.
	mc, err := clientv3.New(clientv3.Config{Endpoints: eps[1:2], DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	waitServes(t, mc, m.Name, "k2", "v")
}
