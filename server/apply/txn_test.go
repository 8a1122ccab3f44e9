package apply_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/server/apply"
	"etcdx/server/mvcc"
)

func cmpOf(key string, target pb.Compare_CompareTarget, result pb.Compare_CompareResult, v any) *pb.Compare {
	c := &pb.Compare{Key: []byte(key), Target: target, Result: result}
	switch target {
	case pb.Compare_VALUE:
		c.TargetUnion = &pb.Compare_Value{Value: []byte(v.(string))}
	case pb.Compare_VERSION:
		c.TargetUnion = &pb.Compare_Version{Version: int64(v.(int))}
	case pb.Compare_CREATE:
		c.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: int64(v.(int))}
	case pb.Compare_MOD:
		c.TargetUnion = &pb.Compare_ModRevision{ModRevision: int64(v.(int))}
	case pb.Compare_LEASE:
		c.TargetUnion = &pb.Compare_Lease{Lease: int64(v.(int))}
	}
	return c
}

func withEnd(c *pb.Compare, end string) *pb.Compare {
	c.RangeEnd = []byte(end)
	return c
}

// Every compare target and result, on a key that exists, one that does not, and ranges of
// keys (all must hold). The fixture's a: value "3", create 2, mod 4, version 2, no lease;
// b: value "2", create 3, mod 3, version 1, lease 100; c: value "5", create 5, mod 5.
func TestCompareSemantics(t *testing.T) {
	st := newState(t)
	const (
		EQ, NE, GT, LT = pb.Compare_EQUAL, pb.Compare_NOT_EQUAL, pb.Compare_GREATER, pb.Compare_LESS
		VAL, VER, CRE  = pb.Compare_VALUE, pb.Compare_VERSION, pb.Compare_CREATE
		MOD, LEASE     = pb.Compare_MOD, pb.Compare_LEASE
	)
	for _, c := range []struct {
		cmp  *pb.Compare
		want bool
	}{
		{cmpOf("a", VAL, EQ, "3"), true},
		{cmpOf("a", VAL, EQ, "4"), false},
		{cmpOf("a", VAL, NE, "3"), false},
		{cmpOf("a", VAL, GT, "2"), true},
		{cmpOf("a", VAL, GT, "3"), false},
		{cmpOf("a", VAL, LT, "30"), true}, // bytes, not numbers
		{cmpOf("a", VER, EQ, 2), true},
		{cmpOf("a", VER, NE, 1), true},
		{cmpOf("a", VER, GT, 2), false},
		{cmpOf("a", VER, LT, 3), true},
		{cmpOf("a", CRE, EQ, 2), true},
		{cmpOf("a", CRE, GT, 1), true},
		{cmpOf("a", CRE, LT, 2), false},
		{cmpOf("a", MOD, EQ, 4), true},
		{cmpOf("a", MOD, NE, 4), false},
		{cmpOf("a", MOD, GT, 3), true},
		{cmpOf("a", MOD, LT, 4), false},
		{cmpOf("a", LEASE, EQ, 0), true},
		{cmpOf("b", LEASE, EQ, 100), true},
		{cmpOf("b", LEASE, GT, 99), true},
		{cmpOf("b", LEASE, LT, 100), false},
		// A missing key has revisions, version and lease 0, and no value at all: every value
		// compare on it fails, even "not equal".
		{cmpOf("z", VAL, EQ, ""), false},
		{cmpOf("z", VAL, NE, "x"), false},
		{cmpOf("z", VER, EQ, 0), true},
		{cmpOf("z", CRE, EQ, 0), true},
		{cmpOf("z", MOD, EQ, 0), true},
		{cmpOf("z", MOD, GT, 0), false},
		{cmpOf("z", LEASE, EQ, 0), true},
		{cmpOf("z", LEASE, NE, 0), false},
		// Over a range every key must hold.
		{withEnd(cmpOf("a", VER, EQ, 1), "c"), false},
		{withEnd(cmpOf("a", VER, GT, 0), "c"), true},
		{withEnd(cmpOf("a", MOD, LT, 5), "c"), true},
		{withEnd(cmpOf("a", MOD, LT, 5), "d"), false},
		{withEnd(cmpOf("a", VAL, NE, ""), "\x00"), true},
		{withEnd(cmpOf("a", CRE, GT, 1), "\x00"), true},
		// A range without keys: a value compare fails, the others judge a key of zeros.
		{withEnd(cmpOf("x", VAL, EQ, ""), "z"), false},
		{withEnd(cmpOf("x", VER, EQ, 0), "z"), true},
		{withEnd(cmpOf("x", MOD, GT, 0), "z"), false},
	} {
		name := fmt.Sprintf("%s[%s,%s) %s %v", c.cmp.Target, c.cmp.Key, c.cmp.RangeEnd, c.cmp.Result, c.cmp.TargetUnion)
		v := st.kv.Read()
		resp, err := apply.ReadOnlyTxn(v, &pb.TxnRequest{Compare: []*pb.Compare{c.cmp}})
		v.End()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.Succeeded != c.want {
			t.Errorf("%s: succeeded %v, want %v", name, resp.Succeeded, c.want)
		}
	}
}

func putOp(k, v string, leaseID int64) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte(v), Lease: leaseID}}}
}

func rangeOp(k string, rev int64) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(k), Revision: rev}}}
}

func deleteOp(k, end string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(k), RangeEnd: []byte(end), PrevKv: true}}}
}

func txnOp(r *pb.TxnRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: r}}
}

// txnResult renders a transaction's answer: its header revision, the branch it took and each
// op's answer, nested transactions in brackets.
func txnResult(r *pb.TxnResponse) string {
	var b strings.Builder
	if r.Header != nil && r.Header.Revision != 0 {
		fmt.Fprintf(&b, "rev=%d ", r.Header.Revision)
	}
	fmt.Fprintf(&b, "succeeded=%v", r.Succeeded)
	for _, op := range r.Responses {
		switch x := op.Response.(type) {
		case *pb.ResponseOp_ResponseRange:
			fmt.Fprintf(&b, " | range %s", rangeResult(x.ResponseRange, nil))
		case *pb.ResponseOp_ResponsePut:
			fmt.Fprintf(&b, " | put rev=%d", x.ResponsePut.Header.Revision)
		case *pb.ResponseOp_ResponseDeleteRange:
			fmt.Fprintf(&b, " | delete rev=%d deleted=%d %s", x.ResponseDeleteRange.Header.Revision, x.ResponseDeleteRange.Deleted, kvs(x.ResponseDeleteRange.PrevKvs))
		case *pb.ResponseOp_ResponseTxn:
			fmt.Fprintf(&b, " | txn [%s]", txnResult(x.ResponseTxn))
		}
	}
	return b.String()
}

// What a transaction does and answers, and that a refused one changes nothing: the fixture's
// revision (5) and keys are checked after every refusal.
func TestTxnSemantics(t *testing.T) {
	for _, c := range []struct {
		name string
		r    *pb.TxnRequest
		want string // the answer, or "error: " and the refusal
		// after is the keys a..z after the transaction, as rangeResult renders them
		after string
	}{
		{
			name:  "no compares takes the success branch",
			r:     &pb.TxnRequest{Success: []*pb.RequestOp{rangeOp("a", 0)}, Failure: []*pb.RequestOp{putOp("f", "1", 0)}},
			want:  "rev=5 succeeded=true | range rev=5 count=1 a=3@2/4/2",
			after: "rev=5 count=3 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1",
		},
		{
			name: "the failure branch when a compare fails",
			r: &pb.TxnRequest{Compare: []*pb.Compare{cmpOf("a", pb.Compare_MOD, pb.Compare_EQUAL, 3)},
				Success: []*pb.RequestOp{putOp("s", "1", 0)}, Failure: []*pb.RequestOp{putOp("f", "1", 0)}},
			want:  "rev=6 succeeded=false | put rev=6",
			after: "rev=6 count=4 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1 f=1@6/6/1",
		},
		{
			name: "ops see the ops before them; every change shares one revision",
			r: &pb.TxnRequest{Compare: []*pb.Compare{cmpOf("a", pb.Compare_MOD, pb.Compare_EQUAL, 4)},
				Success: []*pb.RequestOp{putOp("a", "new", 0), rangeOp("a", 0), putOp("d", "1", 100), deleteOp("b", "")}},
			want:  "rev=6 succeeded=true | put rev=6 | range rev=6 count=1 a=new@2/6/3 | put rev=6 | delete rev=6 deleted=1 b=2@3/3/1+100",
			after: "rev=6 count=3 a=new@2/6/3 c=5@5/5/1 d=1@6/6/1+100",
		},
		{
			name: "a key put twice in one transaction",
			r:    &pb.TxnRequest{Success: []*pb.RequestOp{putOp("e", "1", 0), putOp("e", "2", 0)}},
			want: "rev=6 succeeded=true | put rev=6 | put rev=6",
			// created and last modified at 6, its version counts both puts
			after: "rev=6 count=4 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1 e=2@6/6/2",
		},
		{
			name: "a nested compare sees the state before the request, not the ops before it",
			r: &pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "x", 0), txnOp(&pb.TxnRequest{
				Compare: []*pb.Compare{cmpOf("a", pb.Compare_VALUE, pb.Compare_EQUAL, "3")},
				Success: []*pb.RequestOp{putOp("n", "yes", 0)}, Failure: []*pb.RequestOp{putOp("n", "no", 0)}})}},
			want:  "rev=6 succeeded=true | put rev=6 | txn [succeeded=true | put rev=6]",
			after: "rev=6 count=4 a=x@2/6/3 b=2@3/3/1+100 c=5@5/5/1 n=yes@6/6/1",
		},
		{
			name: "a nested range sees the ops before it",
			r: &pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "x", 0), txnOp(&pb.TxnRequest{
				Success: []*pb.RequestOp{rangeOp("a", 0)}})}},
			want:  "rev=6 succeeded=true | put rev=6 | txn [succeeded=true | range rev=6 count=1 a=x@2/6/3]",
			after: "rev=6 count=3 a=x@2/6/3 b=2@3/3/1+100 c=5@5/5/1",
		},
		{
			name:  "a put on a lease that does not exist refuses the whole transaction",
			r:     &pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "y", 0), putOp("d", "1", 999)}},
			want:  "error: lease not found",
			after: "rev=5 count=3 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1",
		},
		{
			name: "a refusal deep in a nested transaction refuses the whole",
			r: &pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "y", 0), txnOp(&pb.TxnRequest{
				Success: []*pb.RequestOp{deleteOp("c", ""), rangeOp("a", 6)}})}},
			want:  "error: mvcc: required revision is a future revision",
			after: "rev=5 count=3 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1",
		},
		{
			name: "ops on the branch not taken are not checked",
			r: &pb.TxnRequest{Compare: []*pb.Compare{cmpOf("z", pb.Compare_VERSION, pb.Compare_EQUAL, 0)},
				Success: []*pb.RequestOp{putOp("d", "1", 0)}, Failure: []*pb.RequestOp{putOp("d", "1", 999), rangeOp("a", 99)}},
			want:  "rev=6 succeeded=true | put rev=6",
			after: "rev=6 count=4 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1 d=1@6/6/1",
		},
		{
			name:  "ignore_value on a missing key",
			r:     &pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "y", 0), {Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("z"), IgnoreValue: true}}}}},
			want:  "error: etcdserver: key not found",
			after: "rev=5 count=3 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1",
		},
		{
			name:  "ignore_value and ignore_lease keep what the key has",
			r:     &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("b"), IgnoreValue: true, IgnoreLease: true}}}}},
			want:  "rev=6 succeeded=true | put rev=6",
			after: "rev=6 count=3 a=3@2/4/2 b=2@3/6/2+100 c=5@5/5/1",
		},
		{
			name:  "a range at a past revision inside a transaction",
			r:     &pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "y", 0), rangeOp("a", 3)}},
			want:  "rev=6 succeeded=true | put rev=6 | range rev=6 count=1 a=1@2/2/1",
			after: "rev=6 count=3 a=y@2/6/3 b=2@3/3/1+100 c=5@5/5/1",
		},
		{
			name:  "a compare on a range of keys picks the branch",
			r:     &pb.TxnRequest{Compare: []*pb.Compare{withEnd(cmpOf("a", pb.Compare_CREATE, pb.Compare_LESS, 5), "c")}, Success: []*pb.RequestOp{deleteOp("a", "c")}},
			want:  "rev=6 succeeded=true | delete rev=6 deleted=2 a=3@2/4/2 b=2@3/3/1+100",
			after: "rev=6 count=1 c=5@5/5/1",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newState(t)
			resp, err := st.txn(c.r)
			got := ""
			if err != nil {
				got = "error: " + err.Error()
			} else {
				got = txnResult(resp)
			}
			if got != c.want {
				t.Errorf("answer\n got  %s\n want %s", got, c.want)
			}
			if after := rangeResult(st.rangeAt(&pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("zz")})); after != c.after {
				t.Errorf("after\n got  %s\n want %s", after, c.after)
			}
		})
	}
}

// A range at a compacted revision inside a transaction refuses it before its put applies.
func TestTxnRangeAtACompactedRevision(t *testing.T) {
	st := newState(t)
	st.compact(4)
	_, err := st.txn(&pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "y", 0), rangeOp("a", 3)}})
	if !errors.Is(err, mvcc.ErrCompacted) {
		t.Fatalf("got %v, want ErrCompacted", err)
	}
	if got := rangeResult(st.rangeAt(&pb.RangeRequest{Key: []byte("a")})); got != "rev=5 count=1 a=3@2/4/2" {
		t.Fatalf("after: %s", got)
	}
}

// A transaction of ranges only, in a read view: its header is the view's revision, and a
// write in it is refused rather than applied.
func TestReadOnlyTxn(t *testing.T) {
	st := newState(t)
	r := &pb.TxnRequest{Success: []*pb.RequestOp{rangeOp("a", 0), txnOp(&pb.TxnRequest{Success: []*pb.RequestOp{rangeOp("b", 2)}})}}
	if !apply.TxnReadOnly(r) || apply.TxnHasPuts(r) || apply.TxnSerializable(r) {
		t.Fatalf("read only %v, has puts %v, serializable %v", apply.TxnReadOnly(r), apply.TxnHasPuts(r), apply.TxnSerializable(r))
	}
	v := st.kv.Read()
	resp, err := apply.ReadOnlyTxn(v, r)
	v.End()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := txnResult(resp), "rev=5 succeeded=true | range rev=5 count=1 a=3@2/4/2 | txn [succeeded=true | range rev=5 count=0]"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	w := &pb.TxnRequest{Success: []*pb.RequestOp{txnOp(&pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "1", 0)}})}}
	if apply.TxnReadOnly(w) || !apply.TxnHasPuts(w) {
		t.Fatal("a nested put is a write")
	}
	v = st.kv.Read()
	_, err = apply.ReadOnlyTxn(v, w)
	v.End()
	if err == nil {
		t.Fatal("a write in a read view applied")
	}
}

// Put and DeleteRange on their own: prev_kv, the lease rules, the \x00 end.
func TestPutAndDeleteRange(t *testing.T) {
	st := newState(t)
	if _, err := st.put(&pb.PutRequest{Key: []byte("a"), Value: []byte("x"), Lease: 7}); !errors.Is(err, apply.ErrLeaseNotFound) {
		t.Fatalf("put on lease 7: %v", err)
	}
	if _, err := st.put(&pb.PutRequest{Key: []byte("z"), IgnoreLease: true}); !errors.Is(err, apply.ErrKeyNotFound) {
		t.Fatalf("ignore_lease on a missing key: %v", err)
	}
	pr, err := st.put(&pb.PutRequest{Key: []byte("a"), Value: []byte("x"), PrevKv: true})
	if err != nil || pr.Header.Revision != 6 || kvs([]*mvccpb.KeyValue{pr.PrevKv}) != "a=3@2/4/2" {
		t.Fatalf("put with prev_kv: %v %v", pr, err)
	}
	dr, err := st.deleteRange(&pb.DeleteRangeRequest{Key: []byte("b"), RangeEnd: []byte{0}, PrevKv: true})
	if err != nil || dr.Deleted != 2 || dr.Header.Revision != 7 || kvs(dr.PrevKvs) != "b=2@3/3/1+100 c=5@5/5/1" {
		t.Fatalf("delete [b, end): %v %v", dr, err)
	}
	dr, err = st.deleteRange(&pb.DeleteRangeRequest{Key: []byte("q")})
	if err != nil || dr.Deleted != 0 || dr.Header.Revision != 7 {
		t.Fatalf("deleting nothing changes no revision: %v %v", dr, err)
	}
	if got := rangeResult(st.rangeAt(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})); got != "rev=7 count=1 a=x@2/6/3" {
		t.Fatalf("after: %s", got)
	}
}
