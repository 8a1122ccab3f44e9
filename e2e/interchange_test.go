package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// fillKeyspace writes, overwrites and deletes, so history has versions and tombstones.
func fillKeyspace(t *testing.T, c *clientv3.Client) {
	ctx := Ctx(t)
	for i := 0; i < 50; i++ {
		if _, err := c.Put(ctx, fmt.Sprintf("key/%02d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 50; i += 5 {
		c.Put(ctx, fmt.Sprintf("key/%02d", i), "overwritten")
	}
	c.Delete(ctx, "key/4", clientv3.WithPrefix())
}

// dump is the keyspace as a comparable string: keys, values, revisions and versions.
func dump(t *testing.T, c *clientv3.Client) string {
	t.Helper()
	r, err := c.Get(Ctx(t), "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "revision %d\n", r.Header.Revision)
	for _, kv := range r.Kvs {
		fmt.Fprintf(&b, "%s=%s c%d m%d v%d\n", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version)
	}
	return b.String()
}

func saveSnapshot(t *testing.T, c *clientv3.Client) string {
	t.Helper()
	rc, err := c.Snapshot(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	path := filepath.Join(t.TempDir(), "snapshot.db")
	f, _ := os.Create(path)
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func restoreWith(t *testing.T, etcdutl, snap string, m *Member) {
	t.Helper()
	out, err := exec.Command(etcdutl, "snapshot", "restore", snap, "--data-dir", m.DataDir, "--name", m.Name,
		"--initial-cluster", m.Name+"="+m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL).CombinedOutput()
	if err != nil {
		t.Fatalf("%s snapshot restore: %v\n%s", etcdutl, err, out)
	}
}

// Snapshots move between upstream and ours of the same level, at 3.6 and at 3.7.
func TestSnapshotInterchangeWithUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, c := range []struct{ level, upstream string }{{LastReleaseLevel, Upstream36Version}, {CurrentLevel, Upstream37Version}} {
		t.Run(c.level, func(t *testing.T) { snapshotInterchange(t, c.level, c.upstream) })
	}
}

func snapshotInterchange(t *testing.T, level, upstream string) {
	upEtcd, upUtl := UpstreamBinaryAt(t, upstream, "etcd"), UpstreamBinaryAt(t, upstream, "etcdutl")

	t.Run("ours restored by upstream", func(t *testing.T) {
		ours := NewMember(t)
		ours.Bin = ServerAt(t, level)
		ours.Start()
		fillKeyspace(t, ours.Client())
		want := dump(t, ours.Client())
		snap := saveSnapshot(t, ours.Client())
		ours.Stop()

		up := NewMember(t)
		up.Bin = upEtcd
		restoreWith(t, upUtl, snap, up)
		up.Start()
		if got := dump(t, up.Client()); got != want {
			t.Fatalf("upstream serves a different keyspace from our snapshot:\n got %s\nwant %s", got, want)
		}
	})

	t.Run("upstream restored by ours", func(t *testing.T) {
		up := NewMember(t)
		up.Bin = upEtcd
		up.Start()
		fillKeyspace(t, up.Client())
		want := dump(t, up.Client())
		snap := saveSnapshot(t, up.Client())
		up.Stop()

		ours := NewMember(t)
		ours.Bin = ServerAt(t, level)
		restoreWith(t, Binary(t, "etcdutl"), snap, ours)
		ours.Start()
		c := ours.Client()
		if got := dump(t, c); got != want {
			t.Fatalf("we serve a different keyspace from upstream's snapshot:\n got %s\nwant %s", got, want)
		}
		r, err := c.Put(Ctx(t), "after-restore", "1")
		if err != nil {
			t.Fatal(err)
		}
		if r.Header.Revision <= 1 {
			t.Fatalf("write after restore got revision %d", r.Header.Revision)
		}
	})
}
