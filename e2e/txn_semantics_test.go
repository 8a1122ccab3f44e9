package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/protoadapt"
)

// Requests for the transaction tests, built by hand (clientv3 cannot send an empty op or
// every nesting).
func opPut(k, v string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte(v)}}}
}

func opGet(k string, rev int64) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(k), Revision: rev}}}
}

func opDel(k, end string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(k), RangeEnd: []byte(end)}}}
}

func opTxn(t *pb.TxnRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: t}}
}

func cmpValue(k, v string) *pb.Compare {
	return &pb.Compare{Key: []byte(k), Target: pb.Compare_VALUE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_Value{Value: []byte(v)}}
}

// idsInJSON matches the parts of a header that differ between any two members.
var idsInJSON = regexp.MustCompile(`"(cluster_id|member_id)":\s*"[0-9]+"`)

// answerJSON is a response as upstream's gateway would print it, with the member's own IDs
// replaced by "set" (whether a header carries them is what is compared).
func answerJSON(m protoadapt.MessageV1) string {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(protoadapt.MessageV2Of(m))
	if err != nil {
		return "unprintable: " + err.Error()
	}
	return idsInJSON.ReplaceAllString(strings.Join(strings.Fields(string(b)), " "), `"$1":"set"`)
}

// keysNow lists every key with its value, version and revisions, to show what a request changed.
func keysNow(t *testing.T, c *clientv3.Client) string {
	r, err := c.Get(Ctx(t), "", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, kv := range r.Kvs {
		fmt.Fprintf(&b, "%s=%s@v%d,m%d ", kv.Key, kv.Value, kv.Version, kv.ModRevision)
	}
	return fmt.Sprintf("rev %d: %s", r.Header.Revision, b.String())
}

// txnSession sends transactions that fail half way or in odd shapes and reports, for each, the
// answer (error, or the response with its headers) and the store after it.
func txnSession(t *testing.T, m *Member) []string {
	c := m.Client()
	kv := pb.NewKVClient(c.ActiveConnection())
	ctx := Ctx(t)
	var out []string
	for i := range 5 {
		if _, err := c.Put(ctx, "a", fmt.Sprint(i)); err != nil { // revisions 2..6
			t.Fatal(err)
		}
	}
	if _, err := c.Compact(ctx, 5); err != nil {
		t.Fatal(err)
	}
	send := func(name string, r *pb.TxnRequest) {
		resp, err := kv.Txn(ctx, r)
		answer := ""
		if err == nil {
			answer = answerJSON(resp)
		}
		out = append(out, name+" -> "+oddOutcome(err, answer), "  after: "+keysNow(t, c))
	}
	send("put, then a range at a compacted revision", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"), opGet("a", 3)}})
	send("put, then a range at the revision the txn would make", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"), opGet("a", 7)}})
	send("put, then a nested txn reading a compacted revision", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"),
		opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opGet("a", 2)}})}})
	send("put, then a put on a lease that does not exist", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"),
		{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("y"), Value: []byte("1"), Lease: 12345}}}}})
	send("put, then an ignore_value put on a missing key", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"),
		{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("missing"), IgnoreValue: true}}}}})
	send("put, then an empty op", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("x", "1"), {}}})
	send("failure branch: put, then a compacted range", &pb.TxnRequest{Compare: []*pb.Compare{cmpValue("a", "nope")},
		Failure: []*pb.RequestOp{opPut("x", "1"), opGet("a", 4)}})
	send("a nested compare sees the store before the txn", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("n", "1"),
		opTxn(&pb.TxnRequest{Compare: []*pb.Compare{cmpValue("n", "1")}, Success: []*pb.RequestOp{opPut("m", "saw-n")}, Failure: []*pb.RequestOp{opPut("m", "no-n")}})}})
	send("a nested txn puts the same key in both branches", &pb.TxnRequest{Success: []*pb.RequestOp{
		opTxn(&pb.TxnRequest{Compare: []*pb.Compare{cmpValue("a", "4")}, Success: []*pb.RequestOp{opPut("b", "then")}, Failure: []*pb.RequestOp{opPut("b", "else")}})}})
	send("a key put twice", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("d", "1"), opPut("d", "2")}})
	send("a put inside a delete's range", &pb.TxnRequest{Success: []*pb.RequestOp{opDel("c", "e"), opPut("d", "1")}})
	send("a put beside a delete from the key on (range_end \\x00)", &pb.TxnRequest{Success: []*pb.RequestOp{opDel("d", "\x00"), opPut("d", "1")}})
	send("a put and a nested put of the same key", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("e", "1"),
		opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut("e", "2")}})}})
	send("a nested delete, then a later nested put inside it", &pb.TxnRequest{Success: []*pb.RequestOp{
		opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opDel("f", "h")}}), opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut("g", "1")}})}})
	send("a nested put, then a later nested delete over it", &pb.TxnRequest{Success: []*pb.RequestOp{
		opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut("g", "1")}}), opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opDel("f", "h")}})}})
	many := &pb.TxnRequest{}
	for i := range 100 {
		many.Success = append(many.Success, opPut(fmt.Sprintf("many%03d", i), "v"))
	}
	nested := &pb.TxnRequest{}
	for i := range 29 {
		nested.Success = append(nested.Success, opGet(fmt.Sprintf("n%d", i), 0))
	}
	many.Success = append(many.Success, opTxn(nested))
	send("101 ops with a nested txn of 29 (128 allowed in all)", many)
	send("every kind of op, for the headers", &pb.TxnRequest{Compare: []*pb.Compare{cmpValue("a", "4")}, Success: []*pb.RequestOp{
		opGet("a", 0), opPut("h", "1"), opDel("x", ""), opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opGet("a", 0), opPut("i", "1")}})}})
	send("a read-only txn with a nested one, for the headers", &pb.TxnRequest{Success: []*pb.RequestOp{
		opGet("a", 0), opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opGet("h", 0)}})}})
	return out
}

// TestTxnAllOrNothingAsUpstream: a transaction that fails at any op (a range at a compacted or
// future revision, an unknown lease, ignore_value on a missing key, an empty op, inside nested
// transactions too) changes nothing, and every odd shape (nested compares, the same key in both
// branches of a nested txn, puts beside deletes, nested op budgets) gets upstream 3.7.3's
// answer, with its response headers, and leaves the same store.
func TestTxnAllOrNothingAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	besideUpstream(t, txnSession)
}

// headerSession lists the answers whose headers upstream fills only in part: a descending sort
// with ties, a watch cancelled by compaction, the member list and a defragmentation (gRPC and
// the gateway).
func headerSession(t *testing.T, m *Member) []string {
	c := m.Client()
	ctx := Ctx(t)
	var out []string
	for _, k := range []string{"p1", "p2", "p3", "p4"} {
		if _, err := c.Put(ctx, k, "same"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx, "p3", "later"); err != nil {
		t.Fatal(err)
	}
	for _, target := range []clientv3.SortTarget{clientv3.SortByVersion, clientv3.SortByValue, clientv3.SortByCreateRevision} {
		for _, order := range []clientv3.SortOrder{clientv3.SortAscend, clientv3.SortDescend} {
			r, err := c.Get(ctx, "p", clientv3.WithPrefix(), clientv3.WithSort(target, order))
			var keys []string
			if err == nil {
				for _, kv := range r.Kvs {
					keys = append(keys, string(kv.Key))
				}
			}
			out = append(out, fmt.Sprintf("sort target %v order %v -> %s", target, order, oddOutcome(err, strings.Join(keys, ","))))
		}
	}
	if _, err := c.Compact(ctx, 4); err != nil {
		t.Fatal(err)
	}
	wc := pb.NewWatchClient(c.ActiveConnection())
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, err := wc.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: []byte("p1"), StartRevision: 2}}}); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := ws.Recv()
		if err != nil {
			out = append(out, "watch from a compacted revision -> "+oddOutcome(err, ""))
			break
		}
		out = append(out, "watch from a compacted revision -> "+answerJSON(r))
		if r.Canceled {
			break
		}
	}
	cl := pb.NewClusterClient(c.ActiveConnection())
	ml, err := cl.MemberList(ctx, &pb.MemberListRequest{})
	if err == nil {
		ml.Members = nil // the members' own URLs differ
	}
	out = append(out, "member list -> "+oddOutcome(err, answerJSON(ml)))
	d, err := pb.NewMaintenanceClient(c.ActiveConnection()).Defragment(ctx, &pb.DefragmentRequest{})
	out = append(out, "defragment -> "+oddOutcome(err, answerJSON(d)))
	resp, err := http.Post(m.ClientURL+"/v3/maintenance/defragment", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	out = append(out, fmt.Sprintf("gateway defragment -> %d %s", resp.StatusCode, strings.TrimSpace(string(body))))
	return out
}

// TestSortTiesAndHeadersAsUpstream: tied keys of a sort come in key order in both directions,
// and the member list, a compaction-cancelled watch and Defragment carry upstream 3.7.3's
// headers (no revision; none at all for Defragment, whose gateway answer is {}).
func TestSortTiesAndHeadersAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	besideUpstream(t, headerSession)
}
