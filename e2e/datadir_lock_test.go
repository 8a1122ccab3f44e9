package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRestartOverlappingTheOldProcessWaitsForTheLock: a member started on a data dir another
// process still holds (a restart that overlaps the old process's exit) waits for the database
// lock, as upstream's does, and says so; once the old process is gone it starts and serves the
// data. (Upstream waits without a word and without a bound; ours gives up after a while.)
func TestRestartOverlappingTheOldProcessWaitsForTheLock(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	a := NewMember(t)
	a.Start()
	if _, err := a.Client().Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	b := NewMember(t)
	// The same files under another path, so each process has its own log beside its path.
	link := filepath.Join(t.TempDir(), "data")
	if err := os.Symlink(a.DataDir, link); err != nil {
		t.Fatal(err)
	}
	b.DataDir, b.Name, b.PeerURL = link, a.Name, a.PeerURL
	b.ListenPeerURL = fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	if err := b.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.Log(), "the database file is locked by another process; waiting for it") {
		if time.Now().After(deadline) {
			t.Fatalf("the second process did not say it waits for the lock:\n%s", b.LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.Stop()
	if err := b.WaitHealthy(20 * time.Second); err != nil {
		t.Fatalf("after the first process left: %v\n%s", err, b.LogTail(20))
	}
	r, err := b.Client().Get(Ctx(t), "k")
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Fatalf("the data after the takeover: %v %v", r, err)
	}
}
