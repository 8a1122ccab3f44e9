package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// fillAndFree writes n keys of 1 KiB under prefix twice over, then compacts away the first
// versions, so about half of the database is free pages for a defrag to give back.
func fillAndFree(t *testing.T, cli *clientv3.Client, prefix string, n int) {
	t.Helper()
	value := strings.Repeat("v", 1024)
	var rev int64
	for pass := 0; pass < 2; pass++ {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < n; i += 8 {
					if _, err := cli.Put(Ctx(t), fmt.Sprintf("%s/%06d", prefix, i), value); err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		r, err := cli.Get(Ctx(t), prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	if _, err := cli.Compact(Ctx(t), rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
}

// TestDefragLetsWritesThroughAndSurvivesKills: ours defragments without holding writes for the
// copy, and a member killed at any moment of a defrag comes back with every acknowledged write.
//
// A steady load of writes (each read back) runs throughout on a single member of the failpoint
// build. First the copy is held up by defragBeforeCopy=sleep(1500): upstream's defrag holds the
// batch lock there, so no write could complete while the Defragment RPC runs; ours goes on
// acknowledging them. Then the member is killed (SIGKILL) while a copy exists next to the
// database, crashed at defragBeforeRename (the copy has caught up and is synced, writes wait),
// and killed right after a defrag swapped its copy in. Each time it restarts on its own data,
// removes the unfinished copy, and every acknowledged write is there, applied once. A last
// defrag gives the freed space back.
func TestDefragLetsWritesThroughAndSurvivesKills(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 1)
	m := newFailpointMember(t, c.Members[0], "failpoints/etcd")
	c.Start()
	cli := m.Client()
	fillAndFree(t, cli, "fill", 20000)
	load := startSteadyLoad(t, c, "ledger", 2)
	defrag := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := cli.Defragment(ctx, m.ClientURL)
		return err
	}
	dbPath := m.DataDir + "/member/snap/db"
	load.waitAcked(t, 20)

	size := func() int64 {
		t.Helper()
		r, err := cli.Status(Ctx(t), m.ClientURL)
		if err != nil {
			t.Fatal(err)
		}
		return r.DbSize
	}
	filled := size()

	// Writes go on while the copy is held up.
	m.set(t, "defragBeforeCopy", "sleep(1500)")
	before := load.ackedCount()
	if err := defrag(); err != nil {
		t.Fatalf("defrag: %v", err)
	}
	during := load.ackedCount() - before
	t.Logf("%d writes acknowledged during a defrag whose copy was held up 1.5 s", during)
	if during < 20 {
		t.Fatalf("only %d writes acknowledged while the defrag ran: writes waited for it", during)
	}
	// Upstream's two log events, on the RPC's path as at start-up, with how long writes waited.
	for _, event := range []string{`"msg":"defragmenting"`, `"msg":"finished defragmenting directory"`, `"writes-held"`} {
		if !m.LogHas(event) {
			t.Fatalf("the member's log has no %s:\n%s", event, m.LogTail(20))
		}
	}

	restart := func(how string) {
		t.Helper()
		m.Start()
		if _, err := os.Stat(dbPath + ".defrag"); !os.IsNotExist(err) {
			t.Fatalf("after %s: the unfinished copy is still there (%v)", how, err)
		}
		load.waitAcked(t, 20)
	}
	// Killed while the copy exists and writes are being recorded for it.
	m.set(t, "defragBeforeCopy", "sleep(3000)")
	go defrag()
	waitFor(t, Ctx(t), "the defrag's copy", func() bool { _, err := os.Stat(dbPath + ".defrag"); return err == nil })
	m.Kill()
	restart("a kill during the copy")
	if !m.LogHas("removed the copy of an unfinished defragmentation") {
		t.Fatalf("the restarted member did not say it removed the unfinished copy:\n%s", m.LogTail(30))
	}

	// Crashed with the copy caught up and synced, before its rename.
	exited := m.Exited()
	m.set(t, "defragBeforeRename", "panic")
	go defrag()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the member did not reach defragBeforeRename")
	}
	restart("a crash before the rename")

	// Killed right after a defrag swapped its copy in, with writes going into the new file.
	if err := defrag(); err != nil {
		t.Fatalf("defrag: %v", err)
	}
	load.waitAcked(t, 5)
	m.Kill()
	restart("a kill after the swap")

	acked := load.end()
	checkAcked(t, cli, "ledger", acked)
	after := size()
	t.Logf("%d writes acknowledged, %d failed while the member was down; database %d bytes filled, %d after the defrags",
		len(acked), load.failures.Load(), filled, after)
	if after > filled*3/4 {
		t.Fatalf("%d of %d bytes left after the defrags: the freed half was not given back", after, filled)
	}
}
