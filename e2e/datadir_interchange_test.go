package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// memberList is the membership as a comparable string.
func memberList(t *testing.T, c *clientv3.Client) string {
	t.Helper()
	r, err := c.MemberList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range r.Members {
		lines = append(lines, fmt.Sprintf("%x %s peer=%v client=%v learner=%v", m.ID, m.Name, m.PeerURLs, m.ClientURLs, m.IsLearner))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// writeN puts n keys under prefix, enough to take raft snapshots with a small --snapshot-count.
func writeN(t *testing.T, c *clientv3.Client, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := c.Put(Ctx(t), fmt.Sprintf("%s/%03d", prefix, i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
}

func globCount(t *testing.T, pattern string) int {
	t.Helper()
	m, _ := filepath.Glob(pattern)
	return len(m)
}

// requireUpstreamFiles checks the data dir holds WAL segments and raft snapshot files as
// upstream names and sizes them.
func requireUpstreamFiles(t *testing.T, dataDir, who string) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dataDir, "member", "wal", "*.wal"))
	if len(segs) == 0 {
		t.Fatalf("%s left no WAL segments", who)
	}
	sort.Strings(segs)
	if fi, err := os.Stat(segs[len(segs)-1]); err != nil || fi.Size() != 64*1000*1000 {
		t.Fatalf("%s's last WAL segment is not preallocated to upstream's 64 MB: %v %v", who, fi.Size(), err)
	}
	if globCount(t, filepath.Join(dataDir, "member", "snap", "*.snap")) == 0 {
		t.Fatalf("%s left no raft snapshot files", who)
	}
}

// A data dir moves between upstream etcd and ours in place, at 3.6 and at 3.7: upstream's WAL,
// snapshot files and database start under our binary of the same level, and what ours wrote
// starts under upstream's, with every key, revision and member kept.
func TestDataDirInterchangeWithUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, c := range []struct{ level, upstream, below string }{
		{LastReleaseLevel, Upstream36Version, OldestLevel},
		{CurrentLevel, Upstream37Version, LastReleaseLevel},
	} {
		t.Run(c.level, func(t *testing.T) { dataDirInterchange(t, c.level, c.upstream, c.below) })
	}
}

func dataDirInterchange(t *testing.T, level, upstream, below string) {
	up, upUtl := UpstreamBinaryAt(t, upstream, "etcd"), UpstreamBinaryAt(t, upstream, "etcdutl")
	m := NewMember(t, "--snapshot-count", "25")
	m.Bin = up
	m.Start()
	c := m.Client()
	fillKeyspace(t, c)
	// A learner that never starts: the snapshot's v2 store then holds a member without attributes.
	if _, err := c.MemberAddAsLearner(Ctx(t), []string{fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))}); err != nil {
		t.Fatal(err)
	}
	writeN(t, c, "up", 60)
	want, wantMembers := dump(t, c), memberList(t, c)
	requireSameSnapshotStatus(t, saveSnapshot(t, c), upUtl)
	m.Stop()
	requireUpstreamFiles(t, m.DataDir, "upstream")
	// Our etcdutl reads upstream's WAL (migrate checks every entry) without changing anything.
	if out, err := exec.Command(Binary(t, "etcdutl"), "migrate", "--data-dir", m.DataDir, "--target-version", level).CombinedOutput(); err != nil {
		t.Fatalf("our etcdutl migrate on upstream's data dir: %v\n%s", err, out)
	}

	// Ours starts on upstream's data dir and carries on from it.
	m.Bin = ServerAt(t, level)
	m.Start()
	c = m.Client()
	if got := dump(t, c); got != want {
		t.Fatalf("ours serves a different keyspace from upstream's data dir:\n got %s\nwant %s", got, want)
	}
	if got := memberList(t, c); got != wantMembers {
		t.Fatalf("ours recovered different members:\n got %s\nwant %s", got, wantMembers)
	}
	writeN(t, c, "ours", 60)
	want = dump(t, c)
	requireSameSnapshotStatus(t, saveSnapshot(t, c), upUtl)
	m.Stop()
	requireUpstreamFiles(t, m.DataDir, "ours")
	if !strings.Contains(m.Log(), "saved snapshot to disk") {
		t.Fatal("ours took no raft snapshot, so upstream would not read one of ours")
	}

	// Upstream's etcdutl reads our WAL (migrate checks every entry's version) and the member
	// then starts under upstream again.
	if out, err := exec.Command(upUtl, "migrate", "--data-dir", m.DataDir, "--target-version", below).CombinedOutput(); err != nil {
		t.Fatalf("upstream etcdutl migrate on our data dir: %v\n%s", err, out)
	}
	m.Bin = up
	m.Start()
	c = m.Client()
	if got := dump(t, c); got != want {
		t.Fatalf("upstream serves a different keyspace from our data dir:\n got %s\nwant %s", got, want)
	}
	if got := memberList(t, c); got != wantMembers {
		t.Fatalf("upstream recovered different members from our data dir:\n got %s\nwant %s", got, wantMembers)
	}
	if _, err := c.Put(Ctx(t), "after", "1"); err != nil {
		t.Fatal(err)
	}
	// Upstream 3.6 restarts from the newest snapshot file; 3.7 from the newest snapshot the WAL
	// records, without reading the file's v2 store.
	recovered := map[string]string{LastReleaseLevel: "recovered v2 store from snapshot", CurrentLevel: "constructed a snapshot from WAL record"}[level]
	if log := m.Log(); !strings.Contains(log, recovered) {
		t.Fatalf("upstream did not recover from one of our snapshots (%q)\n%s", recovered, m.LogTail(40))
	}
}

// The upgrade of the seeds, on one member: upstream 3.5 -> ours (3.6) -> downgrade to 3.5 ->
// upstream 3.5 again, in place, with no key lost.
func TestDataDirUpgradeFromUpstream35AndBack(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	up35 := UpstreamBinaryAt(t, Upstream35Version, "etcd")
	m := NewMember(t, "--snapshot-count", "25")
	m.Bin = up35
	m.Start()
	c := m.Client()
	fillKeyspace(t, c)
	writeN(t, c, "v35", 60)
	want := dump(t, c)
	m.Stop()

	m.Bin = ServerAt(t, LastReleaseLevel)
	m.Start()
	c = m.Client()
	if got := dump(t, c); got != want {
		t.Fatalf("ours serves a different keyspace from upstream 3.5's data dir:\n got %s\nwant %s", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitFor(t, ctx, "cluster version 3.6", func() bool {
		st, err := c.Status(ctx, m.ClientURL)
		return err == nil && st.Version == ReleaseOf(LastReleaseLevel) && st.StorageVersion == "3.6.0"
	})
	writeN(t, c, "v36", 60)
	want = dump(t, c)
	if _, err := c.Downgrade(ctx, clientv3.DowngradeEnable, "3.5"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "storage version 3.5", func() bool {
		st, err := c.Status(ctx, m.ClientURL)
		return err == nil && st.StorageVersion == "3.5.0"
	})
	m.Stop()

	m.Bin = up35
	m.Start()
	c = m.Client()
	if got := dump(t, c); got != want {
		t.Fatalf("upstream 3.5 serves a different keyspace after the downgrade:\n got %s\nwant %s", got, want)
	}
	if _, err := c.Put(Ctx(t), "after", "1"); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// requireSameSnapshotStatus checks our etcdutl and upstream's report the same status of a
// snapshot file.
func requireSameSnapshotStatus(t *testing.T, file, upUtl string) {
	t.Helper()
	status := func(bin string) string {
		out, err := exec.Command(bin, "snapshot", "status", file, "-w", "json").Output()
		if err != nil {
			t.Fatalf("%s snapshot status: %v\n%s", bin, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if ours, theirs := status(Binary(t, "etcdutl")), status(upUtl); ours != theirs {
		t.Fatalf("snapshot status differs:\n ours     %s\n upstream %s", ours, theirs)
	}
}
