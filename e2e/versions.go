package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"etcdx/pkg/buildinfo"
	"etcdx/upgradelab/cluster"
)

// The levels make build produces: bin/etcd, bin/etcd-last-release and bin/etcd-3.5. Each binary
// reports the upstream patch release of its level (etcdx/pkg/buildinfo).
const (
	CurrentLevel     = "3.7"
	LastReleaseLevel = "3.6"
	OldestLevel      = "3.5"
)

// levelBinaries names the binary make build leaves for each level.
var levelBinaries = map[string]string{CurrentLevel: "etcd", LastReleaseLevel: "etcd-last-release", OldestLevel: "etcd-" + OldestLevel}

// ReleaseOf is the server version a binary of ours at level reports ("3.6" -> "3.6.16").
func ReleaseOf(level string) string { return buildinfo.UpstreamRelease(level) }

var (
	atMu    sync.Mutex
	atBuilt = map[string]string{}
)

// ServerAt returns an etcd binary built from this tree at level ("3.6"): the one make build
// left for it, otherwise built once per test process.
func ServerAt(t testing.TB, level string) string {
	t.Helper()
	if name, ok := levelBinaries[level]; ok {
		return Binary(t, name)
	}
	atMu.Lock()
	defer atMu.Unlock()
	if p, ok := atBuilt[level]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "e2e-etcd-"+level+"-")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "etcd")
	out, err := exec.Command("go", "build", "-o", p, "-ldflags", "-X etcdx/pkg/buildinfo.Level="+level, "etcdx/server").CombinedOutput()
	if err != nil {
		t.Fatalf("build etcd at %s: %v\n%s", level, err, out)
	}
	atBuilt[level] = p
	return p
}

// ToolAt returns our etcdctl or etcdutl built at level: make build leaves the older levels' in
// bin/levels/<level>.
func ToolAt(t testing.TB, level, name string) string {
	t.Helper()
	if level == CurrentLevel {
		return Binary(t, name)
	}
	return Binary(t, filepath.Join("levels", level, name))
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

// WaitHeldBy waits until the leader has decided, having seen a newer member, to keep the cluster
// version for the members in held (the log event "the cluster version stays until every member
// runs a newer binary" naming exactly them): the event that proves the version loop looked at the
// mixed cluster, where a sleep would pass with a slow loop.
func (c *Cluster) WaitHeldBy(held []*Member, timeout time.Duration) {
	c.t.Helper()
	ids := map[string]uint64{}
	resp, err := c.Client().MemberList(Ctx(c.t))
	if err != nil {
		c.t.Fatal(err)
	}
	for _, m := range resp.Members {
		ids[m.Name] = m.ID
	}
	var want []uint64
	for _, m := range held {
		want = append(want, ids[m.Name])
	}
	slices.Sort(want)
	hex := make([]string, len(want))
	for i, id := range want {
		hex[i] = fmt.Sprintf("%x", id)
	}
	field := fmt.Sprintf(`"members":%q`, strings.Join(hex, ","))
	const event = "the cluster version stays until every member runs a newer binary"
	deadline := time.Now().Add(timeout)
	for {
		for _, m := range c.Members {
			for _, l := range strings.Split(m.Log(), "\n") {
				if strings.Contains(l, event) && strings.Contains(l, field) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no leader logged %q with %s within %v", event, field, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
