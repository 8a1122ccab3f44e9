package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// watchedEvents are the log messages operators and tools wait for, in upstream's words.
var watchedEvents = []string{
	"starting etcd server",
	"serving peer traffic",
	"published local member to cluster through raft",
	"ready to serve client requests",
	"set initial cluster version",
	"triggering snapshot",
	"saved snapshot to disk",
	"finished scheduled compaction",
	"added member",
	"removed member",
}

// The same life, lived by upstream etcd 3.6.16 and by ours: every watched event upstream logs,
// ours logs too (formats aside: the message text is what tools match).
func TestWatchedLogEventsMatchUpstream(t *testing.T) {
	live := func(bin string) string {
		m := NewMember(t, "--snapshot-count", "50", "--snapshot-catchup-entries", "10")
		m.Bin = bin
		m.Start()
		c := m.Client()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var rev int64
		for i := 0; i < 120; i++ {
			r, err := c.Put(ctx, fmt.Sprintf("k%03d", i), "v")
			if err != nil {
				t.Fatal(err)
			}
			rev = r.Header.Revision
		}
		if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
			t.Fatal(err)
		}
		add, err := c.MemberAddAsLearner(ctx, []string{fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.MemberRemove(ctx, add.Member.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // let the last lines reach the log
		if err := m.Stop(); err != nil {
			t.Logf("%s stopped with %v", bin, err) // upstream ends by its signal
		}
		return m.Log()
	}
	up := live(UpstreamBinary(t, "etcd"))
	ours := live(Binary(t, "etcd"))
	for _, ev := range watchedEvents {
		if !strings.Contains(up, ev) {
			t.Errorf("upstream did not log %q in this run: the scenario no longer covers it", ev)
			continue
		}
		if !strings.Contains(ours, ev) {
			t.Errorf("upstream logs %q, ours does not", ev)
		}
	}
}
