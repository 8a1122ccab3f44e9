package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestWatchProgressNotifyInterval(t *testing.T) {
	m := NewMember(t, "--watch-progress-notify-interval", "500ms")
	m.Start()
	c := m.Client()
	c.Put(Ctx(t), "k", "v")
	ch := c.Watch(Ctx(t), "quiet", clientv3.WithProgressNotify())
	r := recvWatch(t, ch)
	if !r.IsProgressNotify() || r.Header.Revision != 2 {
		t.Fatalf("want a progress notification at revision 2 on a quiet watch, got %+v", r)
	}
}

func TestAutoCompactionPeriodic(t *testing.T) {
	m := NewMember(t, "--auto-compaction-mode", "periodic", "--auto-compaction-retention", "2s")
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	deadline := time.Now().Add(12 * time.Second)
	for i := 0; ; i++ {
		c.Put(ctx, "k", fmt.Sprint(i))
		if _, err := c.Get(ctx, "k", clientv3.WithRev(2)); errors.Is(err, rpctypes.ErrCompacted) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no automatic compaction within 12s with a 2s retention\n%s", m.LogTail(10))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(m.Log(), "auto compaction") {
		t.Fatal("automatic compaction was not logged")
	}
	// History inside the retention window is still there.
	r, err := c.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "k", clientv3.WithRev(r.Header.Revision-1)); err != nil {
		t.Fatalf("recent history was compacted away: %v", err)
	}
}

func TestGatewayWatchStreams(t *testing.T) {
	m := NewMember(t)
	m.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", m.ClientURL+"/v3/watch", strings.NewReader(`{"create_request":{"key":"Zm9v"}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"created":true`) {
		t.Fatalf("first line: %q", lines.Text())
	}
	httpDo(t, "POST", m.ClientURL+"/v3/kv/put", `{"key":"Zm9v","value":"YmFy"}`)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"value":"YmFy"`) || !strings.Contains(lines.Text(), `"mod_revision":"2"`) {
		t.Fatalf("event line: %q (%v)", lines.Text(), lines.Err())
	}
}
