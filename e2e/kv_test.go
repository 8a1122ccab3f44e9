package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestKVRangeOptions(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	// Revisions: the empty store is revision 1; each put below is the next one.
	for i, kv := range [][2]string{{"a", "3"}, {"b", "1"}, {"c", "2"}, {"b", "4"}} {
		r, err := c.Put(ctx, kv[0], kv[1])
		if err != nil {
			t.Fatal(err)
		}
		if r.Header.Revision != int64(i+2) {
			t.Fatalf("put %v: revision %d, want %d", kv, r.Header.Revision, i+2)
		}
	}
	get := func(key string, opts ...clientv3.OpOption) *clientv3.GetResponse {
		t.Helper()
		r, err := c.Get(ctx, key, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	keys := func(r *clientv3.GetResponse) string {
		var s []string
		for _, kv := range r.Kvs {
			s = append(s, string(kv.Key)+"="+string(kv.Value))
		}
		return strings.Join(s, ",")
	}
	if r := get("", clientv3.WithPrefix()); keys(r) != "a=3,b=4,c=2" || r.Count != 3 {
		t.Fatalf("prefix: %s count %d", keys(r), r.Count)
	}
	r := get("b")
	if kv := r.Kvs[0]; kv.Version != 2 || kv.CreateRevision != 3 || kv.ModRevision != 5 {
		t.Fatalf("b metadata: %+v", kv)
	}
	if r := get("a", clientv3.WithRange("c")); keys(r) != "a=3,b=4" {
		t.Fatalf("range [a,c): %s", keys(r))
	}
	if r := get("b", clientv3.WithFromKey()); keys(r) != "b=4,c=2" {
		t.Fatalf("from key: %s", keys(r))
	}
	if r := get("", clientv3.WithPrefix(), clientv3.WithLimit(2)); keys(r) != "a=3,b=4" || !r.More || r.Count != 3 {
		t.Fatalf("limit: %s more=%v count=%d", keys(r), r.More, r.Count)
	}
	if r := get("", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByValue, clientv3.SortDescend)); keys(r) != "b=4,a=3,c=2" {
		t.Fatalf("sort by value desc: %s", keys(r))
	}
	if r := get("", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend), clientv3.WithLimit(1)); keys(r) != "a=3" || !r.More {
		t.Fatalf("sort by mod + limit: %s", keys(r))
	}
	if r := get("", clientv3.WithPrefix(), clientv3.WithKeysOnly()); r.Kvs[0].Value != nil || len(r.Kvs) != 3 {
		t.Fatalf("keys only: %+v", r.Kvs)
	}
	if r := get("", clientv3.WithPrefix(), clientv3.WithCountOnly()); len(r.Kvs) != 0 || r.Count != 3 {
		t.Fatalf("count only: %d kvs, count %d", len(r.Kvs), r.Count)
	}
	if r := get("b", clientv3.WithRev(3)); keys(r) != "b=1" {
		t.Fatalf("b at rev 3: %s", keys(r))
	}
	if r := get("", clientv3.WithPrefix(), clientv3.WithMinModRev(4)); keys(r) != "b=4,c=2" {
		t.Fatalf("min mod rev: %s", keys(r))
	}
	if r := get("", clientv3.WithPrefix(), clientv3.WithMaxCreateRev(3)); keys(r) != "a=3,b=4" {
		t.Fatalf("max create rev: %s", keys(r))
	}
	if r := get("a", clientv3.WithSerializable()); keys(r) != "a=3" {
		t.Fatalf("serializable: %s", keys(r))
	}
	if _, err := c.Get(ctx, "a", clientv3.WithRev(100)); !errors.Is(err, rpctypes.ErrFutureRev) {
		t.Fatalf("future revision: %v", err)
	}
	if _, err := c.Put(ctx, "", "x"); !errors.Is(err, rpctypes.ErrEmptyKey) {
		t.Fatalf("empty key: %v", err)
	}
}

func TestKVPutDeleteOptions(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	c.Put(ctx, "k", "v1")
	pr, err := c.Put(ctx, "k", "v2", clientv3.WithPrevKV())
	if err != nil || pr.PrevKv == nil || string(pr.PrevKv.Value) != "v1" {
		t.Fatalf("prev kv: %+v %v", pr, err)
	}
	if _, err := c.Put(ctx, "missing", "", clientv3.WithIgnoreValue()); !errors.Is(err, rpctypes.ErrKeyNotFound) {
		t.Fatalf("ignore value on missing key: %v", err)
	}
	lg, err := c.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "k", "", clientv3.WithIgnoreValue(), clientv3.WithLease(lg.ID)); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Get(ctx, "k")
	if string(r.Kvs[0].Value) != "v2" || r.Kvs[0].Lease != int64(lg.ID) {
		t.Fatalf("ignore value kept value and set lease: %+v", r.Kvs[0])
	}
	if _, err := c.Put(ctx, "k", "v3", clientv3.WithIgnoreLease()); err != nil {
		t.Fatal(err)
	}
	r, _ = c.Get(ctx, "k")
	if string(r.Kvs[0].Value) != "v3" || r.Kvs[0].Lease != int64(lg.ID) {
		t.Fatalf("ignore lease kept lease: %+v", r.Kvs[0])
	}
	if _, err := c.Put(ctx, "k", "x", clientv3.WithLease(clientv3.LeaseID(12345))); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("unknown lease: %v", err)
	}
	for i := 0; i < 3; i++ {
		c.Put(ctx, fmt.Sprintf("p/%d", i), "x")
	}
	dr, err := c.Delete(ctx, "p/", clientv3.WithPrefix(), clientv3.WithPrevKV())
	if err != nil || dr.Deleted != 3 || len(dr.PrevKvs) != 3 {
		t.Fatalf("delete prefix: %+v %v", dr, err)
	}
	dr, _ = c.Delete(ctx, "p/", clientv3.WithPrefix())
	if dr.Deleted != 0 {
		t.Fatalf("second delete deleted %d", dr.Deleted)
	}
}

func TestKVTxn(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	pr, _ := c.Put(ctx, "x", "1")
	rev := pr.Header.Revision
	lg, _ := c.Grant(ctx, 60)
	c.Put(ctx, "l", "v", clientv3.WithLease(lg.ID))

	tr, err := c.Txn(ctx).If(
		clientv3.Compare(clientv3.Value("x"), "=", "1"),
		clientv3.Compare(clientv3.Version("x"), "=", 1),
		clientv3.Compare(clientv3.CreateRevision("x"), "=", rev),
		clientv3.Compare(clientv3.ModRevision("x"), "<", rev+10),
		clientv3.Compare(clientv3.LeaseValue("l"), "=", lg.ID),
		clientv3.Compare(clientv3.Version("absent"), "=", 0),
	).Then(clientv3.OpPut("x", "2"), clientv3.OpGet("x"),
		clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value("x"), "=", "2")},
			[]clientv3.Op{clientv3.OpPut("nested", "yes")}, nil)).
		Else(clientv3.OpPut("x", "failed")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Succeeded {
		t.Fatal("all compares hold, but the txn took the else branch")
	}
	if got := string(tr.Responses[1].GetResponseRange().Kvs[0].Value); got != "2" {
		t.Fatalf("a range after a put in the same txn sees %q", got)
	}
	// As upstream, every compare of a request is judged before any of its ops runs: the nested
	// one sees x=1, not the outer put's 2.
	if tr.Responses[2].GetResponseTxn().Succeeded {
		t.Fatal("a nested compare saw the outer branch's own put")
	}
	r, _ := c.Get(ctx, "nested")
	if len(r.Kvs) != 0 {
		t.Fatalf("nested put applied from the branch not taken: %+v", r.Kvs)
	}
	tr, _ = c.Txn(ctx).If(clientv3.Compare(clientv3.Value("absent"), "=", "")).Then(clientv3.OpPut("t", "then")).Else(clientv3.OpPut("t", "else")).Commit()
	if tr.Succeeded {
		t.Fatal("a value compare on a missing key must fail")
	}
	if _, err := c.Txn(ctx).Then(clientv3.OpPut("d", "1"), clientv3.OpPut("d", "2")).Commit(); !errors.Is(err, rpctypes.ErrDuplicateKey) {
		t.Fatalf("duplicate key: %v", err)
	}
	var ops []clientv3.Op
	for i := 0; i < 129; i++ {
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("o%d", i), "v"))
	}
	if _, err := c.Txn(ctx).Then(ops...).Commit(); !errors.Is(err, rpctypes.ErrTooManyOps) {
		t.Fatalf("too many ops: %v", err)
	}
	before, _ := c.Get(ctx, "x")
	if _, err := c.Txn(ctx).Then(clientv3.OpPut("x", "9"), clientv3.OpPut("y", "1", clientv3.WithLease(777))).Commit(); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("txn with unknown lease: %v", err)
	}
	after, _ := c.Get(ctx, "x")
	if string(after.Kvs[0].Value) != string(before.Kvs[0].Value) || after.Header.Revision != before.Header.Revision {
		t.Fatal("a failed txn applied part of its operations")
	}
}

func TestKVCompaction(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	for i := 0; i < 5; i++ {
		c.Put(ctx, "k", fmt.Sprint(i))
	}
	cr, err := c.Compact(ctx, 4, clientv3.WithCompactPhysical())
	if err != nil {
		t.Fatal(err)
	}
	if cr.Header.Revision != 6 {
		t.Fatalf("compaction header revision %d", cr.Header.Revision)
	}
	if _, err := c.Get(ctx, "k", clientv3.WithRev(3)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("read below compaction: %v", err)
	}
	r, err := c.Get(ctx, "k", clientv3.WithRev(4))
	if err != nil || string(r.Kvs[0].Value) != "2" {
		t.Fatalf("read at compaction revision: %+v %v", r, err)
	}
	if _, err := c.Compact(ctx, 4); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("compact again: %v", err)
	}
	if _, err := c.Compact(ctx, 100); !errors.Is(err, rpctypes.ErrFutureRev) {
		t.Fatalf("compact future: %v", err)
	}
}

func TestRequestTooLarge(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	big := strings.Repeat("x", 1600*1024) // over the 1.5 MiB default, under the gRPC limit
	if _, err := c.Put(ctx, "big", big); !errors.Is(err, rpctypes.ErrRequestTooLarge) {
		t.Fatalf("oversize put: %v", err)
	}
	if _, err := c.Put(ctx, "ok", strings.Repeat("x", 1024*1024)); err != nil {
		t.Fatalf("1 MiB put: %v", err)
	}
	if r, _ := c.Get(ctx, "big"); len(r.Kvs) != 0 {
		t.Fatal("rejected request was stored")
	}
}

// TestPaginatedListAsUpstream lists a prefix as kube-apiserver does (pages of 7: the first at
// the current revision, the rest at its revision from just after the last key) while keys in
// the prefix are written and deleted between the pages, beside upstream: every page's keys,
// values, More and Count agree. Ours carries the count from one page to the next instead of
// walking the range to its end again; the writes must change none of it. Pages with keys only,
// a sort order or a revision filter, and a whole-prefix read, are compared too.
func TestPaginatedListAsUpstream(t *testing.T) {
	besideUpstream(t, func(t *testing.T, m *Member) []string {
		c := m.Client()
		ctx := Ctx(t)
		for i := 0; i < 60; i++ {
			if _, err := c.Put(ctx, fmt.Sprintf("obj/%02d", i), strings.Repeat("v", i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Put(ctx, "obk", "outside"); err != nil {
			t.Fatal(err)
		}
		page := func(r *clientv3.GetResponse) string {
			var ks []string
			for _, kv := range r.Kvs {
				ks = append(ks, fmt.Sprintf("%s=%d@%d/%d/%d", kv.Key, len(kv.Value), kv.CreateRevision, kv.ModRevision, kv.Version))
			}
			return fmt.Sprintf("rev %d more %t count %d: %s", r.Header.Revision, r.More, r.Count, strings.Join(ks, ","))
		}
		var out []string
		for _, opts := range [][]clientv3.OpOption{nil, {clientv3.WithKeysOnly()}, {clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}, {clientv3.WithMinModRev(20)}} {
			key, rev, n := "obj/", int64(0), 0
			for {
				o := append([]clientv3.OpOption{clientv3.WithRange("obj0"), clientv3.WithLimit(7)}, opts...)
				if rev != 0 {
					o = append(o, clientv3.WithRev(rev))
				}
				r, err := c.Get(ctx, key, o...)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, page(r))
				rev = r.Header.Revision
				// A write and a delete inside the listed prefix, after the list's revision.
				if _, err := c.Put(ctx, fmt.Sprintf("obj/%02da", n), "new"); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Delete(ctx, fmt.Sprintf("obj/%02d", 59-n)); err != nil {
					t.Fatal(err)
				}
				n++
				if !r.More || len(r.Kvs) == 0 {
					break
				}
				key = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
			}
			r, err := c.Get(ctx, "obj/", append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(rev)}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, "whole: "+page(r))
		}
		return out
	})
}
