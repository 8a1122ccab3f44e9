package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/e2e/reqrecord"
)

// TestRecordingProxyForwardsAndRecords sends kube-apiserver's kinds of request (a create and an
// update as Txns on mod_revision, a paginated list, a put with a lease, a watch with progress
// notifications, a compaction) through the recording proxy to our member, checks every answer
// is the member's, and that the recorder groups them as kube-shape reports them.
func TestRecordingProxyForwardsAndRecords(t *testing.T) {
	m := NewMember(t, "--watch-progress-notify-interval=500ms")
	m.Start()
	rec := reqrecord.NewRecorder()
	p, err := reqrecord.Start(strings.TrimPrefix(m.ClientURL, "http://"), rec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + p.Addr()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := Ctx(t)

	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	wch := c.Watch(wctx, "/registry/pods/", clientv3.WithPrefix(), clientv3.WithProgressNotify(), clientv3.WithPrevKV())
	for i := 0; i < 3; i++ {
		key := fmt.Sprintf("/registry/pods/ns/p%d", i)
		r, err := c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).Then(clientv3.OpPut(key, strings.Repeat("x", 100))).Commit()
		if err != nil || !r.Succeeded {
			t.Fatalf("create %s: %v %v", key, r, err)
		}
	}
	// an update whose compare fails reads the object back (kube-apiserver's GuaranteedUpdate)
	r, err := c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("/registry/pods/ns/p0"), "=", 1)).
		Then(clientv3.OpPut("/registry/pods/ns/p0", "y")).Else(clientv3.OpGet("/registry/pods/ns/p0")).Commit()
	if err != nil || r.Succeeded || len(r.Responses[0].GetResponseRange().Kvs) != 1 {
		t.Fatalf("conflicting update: %v %v", r, err)
	}
	got, err := c.Get(ctx, "/registry/pods/", clientv3.WithPrefix(), clientv3.WithLimit(2))
	if err != nil || len(got.Kvs) != 2 || !got.More || got.Count != 3 {
		t.Fatalf("first page: %v %v", got, err)
	}
	lease, err := c.Grant(ctx, 3660)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "/registry/events/ns/e1", "event", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	events, progress := 0, 0
	for events < 3 || progress == 0 {
		select {
		case wr := <-wch:
			if err := wr.Err(); err != nil {
				t.Fatal(err)
			}
			if wr.IsProgressNotify() {
				progress++
			}
			events += len(wr.Events)
		case <-time.After(10 * time.Second):
			t.Fatalf("watch through the proxy: %d events, %d progress notifications", events, progress)
		}
	}
	if _, err := c.Compact(ctx, got.Header.Revision); err != nil {
		t.Fatal(err)
	}

	rows := reqrecord.Summarize(rec.Calls(), "/registry", reqrecord.Window{Phase: "all", To: rec.Elapsed()})
	find := func(method, resource, shape string) reqrecord.Row {
		for _, r := range rows {
			if r.Method == method && r.Resource == resource && r.Shape == shape {
				return r
			}
		}
		t.Errorf("no row %s %s %q in %+v", method, resource, shape, rows)
		return reqrecord.Row{}
	}
	if r := find("Txn", "pods", "mod= ? put : -"); r.Calls != 3 || r.Then != 3 || r.ValueBytes.Max != 100 {
		t.Errorf("creates: %+v", r)
	}
	if r := find("Txn", "pods", "mod= ? put : range"); r.Calls != 1 || r.Then != 0 || r.AnswerCount.Max != 1 {
		t.Errorf("conflicting update: %+v", r)
	}
	if r := find("Range", "pods", "limit=2"); r.Calls != 1 || r.Span != "prefix" || r.AnswerCount.Max != 2 {
		t.Errorf("page: %+v", r)
	}
	if r := find("Put", "events", ""); r.Leased != 1 {
		t.Errorf("leased put: %+v", r)
	}
	if r := find("LeaseGrant", "", ""); r.Calls != 1 {
		t.Errorf("lease grant: %+v", r)
	}
	if r := find("Watch", "pods", "create progress-notify prev-kv"); r.Calls != 1 || r.Span != "prefix" {
		t.Errorf("watch create: %+v", r)
	}
	if r := find("Watch answer", "pods", "events"); r.Calls == 0 {
		t.Errorf("watch events: %+v", r)
	}
	if r := find("Watch answer", "pods", "progress"); r.Calls == 0 {
		t.Errorf("progress notifications: %+v", r)
	}
	find("Compact", "", "")
}
