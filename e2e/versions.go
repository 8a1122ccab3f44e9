package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"etcdx/upgradelab/cluster"
)

// The levels make build produces: bin/etcd and bin/etcd-last-release.
const (
	CurrentVersion     = "3.6.0"
	LastReleaseVersion = "3.5.0"
)

var (
	atMu    sync.Mutex
	atBuilt = map[string]string{}
)

// ServerAt returns an etcd binary built from this tree at version v: bin/etcd or
// bin/etcd-last-release when v is their level, otherwise built once per test process.
func ServerAt(t testing.TB, v string) string {
	t.Helper()
	switch v {
	case CurrentVersion:
		return Binary(t, "etcd")
	case LastReleaseVersion:
		return Binary(t, "etcd-last-release")
	}
	atMu.Lock()
	defer atMu.Unlock()
	if p, ok := atBuilt[v]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "e2e-etcd-"+v+"-")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "etcd")
	out, err := exec.Command("go", "build", "-o", p, "-ldflags", "-X etcdx/pkg/buildinfo.Version="+v, "etcdx/server").CombinedOutput()
	if err != nil {
		t.Fatalf("build etcd at %s: %v\n%s", v, err, out)
	}
	atBuilt[v] = p
	return p
}

// Versions asks the member's client URL for /version.
func (m *Member) Versions() (cluster.Versions, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return m.Member.Versions(ctx)
}

// WaitVersions polls every member until each reports want (cluster and storage version).
func (c *Cluster) WaitVersions(cluster, storage string, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for _, m := range c.Members {
		for {
			v, err := m.Versions()
			if err == nil && v.Cluster == cluster && v.Storage == storage {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("%s reports %+v (err %v), want cluster %q storage %q\n%s", m.Name, v, err, cluster, storage, m.LogTail(15))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
