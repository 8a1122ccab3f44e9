package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// oddOutcome says how a request ended in terms both implementations share: the gRPC code and
// upstream's error text, or what the answer held.
func oddOutcome(err error, ok string) string {
	if err == nil {
		return "ok " + ok
	}
	return fmt.Sprintf("%s: %s", status.Code(err), rpctypes.ErrorDesc(err))
}

// firstWatchAnswer is the first response of a watch from rev, or "no answer" after a while.
//
// Each watch gets a gRPC stream of its own (the client keys streams by outgoing metadata) and a
// bounded context: the client library (3.6.16) once hung a new Watch call for good on the
// stream of the watch before, whose shutdown deadlocked after the server cancelled it.
func firstWatchAnswer(c *clientv3.Client, key string, rev int64) string {
	md := metadata.AppendToOutgoingContext(context.Background(), "etcdx-e2e-watch", fmt.Sprint(rev))
	ctx, cancel := context.WithTimeout(md, 10*time.Second)
	defer cancel()
	wch := c.Watch(ctx, key, clientv3.WithRev(rev))
	select {
	case r, ok := <-wch:
		if !ok {
			return "closed"
		}
		return fmt.Sprintf("canceled=%v compact-revision=%d events=%d err=%v", r.Canceled, r.CompactRevision, len(r.Events), r.Err())
	case <-time.After(3 * time.Second):
		return "no answer"
	}
}

// oddRequests sends the same odd requests to m and returns one line per request.
func oddRequests(t *testing.T, m *Member) []string {
	c := m.Client()
	ctx := Ctx(t)
	var out []string
	add := func(name, outcome string) { out = append(out, name+" -> "+outcome) }

	for i := 0; i < 4; i++ {
		if _, err := c.Put(ctx, "odd", fmt.Sprint(i)); err != nil { // revisions 2..5
			t.Fatal(err)
		}
	}
	add("watch from -1", firstWatchAnswer(c, "odd", -1))
	add("watch from -5", firstWatchAnswer(c, "odd", -5))
	add("watch from 1 before any compaction", firstWatchAnswer(c, "odd", 1))
	if _, err := c.Compact(ctx, 4); err != nil {
		t.Fatal(err)
	}
	add("watch from a compacted revision", firstWatchAnswer(c, "odd", 2))
	add("watch from the compaction revision", firstWatchAnswer(c, "odd", 4))
	add("watch from -3 after compaction", firstWatchAnswer(c, "odd", -3))

	for _, ttl := range []int64{-1, 0, 1, 9_000_000_000, 9_000_000_001, math.MaxInt64} {
		r, err := c.Grant(ctx, ttl)
		ok := ""
		if err == nil {
			ok = fmt.Sprintf("ttl=%d id-set=%v", r.TTL, r.ID != 0)
		}
		add(fmt.Sprintf("lease grant ttl %d", ttl), oddOutcome(err, ok))
	}

	rangeOf := func(name, key string, opts ...clientv3.OpOption) {
		r, err := c.Get(ctx, key, opts...)
		ok := ""
		if err == nil {
			ok = fmt.Sprintf("count=%d kvs=%d more=%v", r.Count, len(r.Kvs), r.More)
		}
		add(name, oddOutcome(err, ok))
	}
	rangeOf("range of the empty key", "")
	rangeOf("range of everything", "\x00", clientv3.WithFromKey())
	rangeOf("range with the end before the key", "z", clientv3.WithRange("a"))
	rangeOf("range with a negative limit", "odd", clientv3.WithLimit(-1))
	rangeOf("range at a future revision", "odd", clientv3.WithRev(1000))
	rangeOf("range at a compacted revision", "odd", clientv3.WithRev(2))
	rangeOf("range at a negative revision", "odd", clientv3.WithRev(-2))
	rangeOf("range of a 2 MiB key (refused by the client)", strings.Repeat("k", 2<<20))
	rangeOf("range of a 1.7 MiB key", strings.Repeat("k", 17<<20/10))

	_, err := c.Put(ctx, "", "v")
	add("put of the empty key", oddOutcome(err, ""))
	_, err = c.Put(ctx, "big", strings.Repeat("v", 2<<20))
	add("put of a 2 MiB value (refused by the client)", oddOutcome(err, ""))
	_, err = c.Put(ctx, "big", strings.Repeat("v", 17<<20/10))
	add("put of a 1.7 MiB value", oddOutcome(err, ""))
	_, err = c.Put(ctx, "absent", "", clientv3.WithIgnoreValue())
	add("put ignoring the value of an absent key", oddOutcome(err, ""))
	_, err = c.Put(ctx, "odd", "v", clientv3.WithLease(clientv3.LeaseID(12345)))
	add("put with an unknown lease", oddOutcome(err, ""))
	_, err = c.Delete(ctx, "")
	add("delete of the empty key", oddOutcome(err, ""))
	_, err = c.Compact(ctx, 1000)
	add("compact at a future revision", oddOutcome(err, ""))
	_, err = c.Compact(ctx, 3)
	add("compact below the compacted revision", oddOutcome(err, ""))
	var many []clientv3.Op
	for i := 0; i < 129; i++ {
		many = append(many, clientv3.OpPut(fmt.Sprint("t", i), "v"))
	}
	_, err = c.Txn(ctx).Then(many...).Commit()
	add("txn of 129 operations", oddOutcome(err, ""))
	_, err = c.Txn(ctx).Then(clientv3.OpPut("dup", "1"), clientv3.OpPut("dup", "2")).Commit()
	add("txn putting one key twice", oddOutcome(err, ""))

	gw := func(name, method, path, body string) {
		code, resp := httpDo(t, method, m.ClientURL+path, body)
		add(name, fmt.Sprintf("%d %s", code, gatewayErrorOf(resp)))
	}
	gw("gateway: malformed JSON", "POST", "/v3/kv/range", `{"key":`)
	gw("gateway: wrong field type", "POST", "/v3/kv/range", `{"key":5}`)
	gw("gateway: key not base64", "POST", "/v3/kv/range", `{"key":"%%%"}`)
	gw("gateway: unknown field", "POST", "/v3/kv/range", `{"nokey":"YQ=="}`)
	gw("gateway: empty body", "POST", "/v3/kv/range", ``)
	gw("gateway: 3 MiB put", "POST", "/v3/kv/put", `{"key":"YQ==","value":"`+strings.Repeat("QUFB", 1<<20)+`"}`)
	gw("gateway: unknown path", "POST", "/v3/kv/nothing", `{}`)
	gw("gateway: GET of a POST path", "GET", "/v3/kv/range", ``)
	gw("gateway: txn compare without a key", "POST", "/v3/kv/txn", `{"compare":[{"target":"VALUE","result":"EQUAL","value":"Yg=="}]}`)
	gw("gateway: nested txn compare without a key", "POST", "/v3/kv/txn", `{"success":[{"request_txn":{"compare":[{"target":"VERSION","version":"1"}]}}]}`)
	gw("gateway: txn with the same key put twice", "POST", "/v3/kv/txn", `{"success":[{"request_put":{"key":"YQ==","value":"Yw=="}},{"request_put":{"key":"YQ==","value":"Yw=="}}]}`)
	return out
}

// gatewayErrorOf keeps what a gateway error body says (code and message), not its layout.
func gatewayErrorOf(body string) string {
	var e struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || (e.Code == nil && e.Message == "" && e.Error == "") {
		if len(body) > 80 {
			body = body[:80] + "..."
		}
		return strings.TrimSpace(body)
	}
	code := -1
	if e.Code != nil {
		code = *e.Code
	}
	// protobuf's JSON errors put a space or a no-break space after "proto:" depending on the
	// binary (on purpose, so nobody matches its texts exactly); the rest is the same.
	msg := strings.ReplaceAll(e.Message+e.Error, "\u00a0", " ")
	return fmt.Sprintf("code=%d message=%q", code, msg)
}

// TestOddRequestsMatchUpstream: every odd request (watches from negative or compacted
// revisions, lease TTLs out of range, empty and huge keys and ranges, oversize and malformed
// gateway bodies, transactions whose compares lack a key) gets the answer upstream 3.7.3 gives,
// and none goes unanswered.
func TestOddRequestsMatchUpstream(t *testing.T) {
	up := NewMember(t)
	up.Bin = UpstreamBinary(t, "etcd")
	up.Start()
	want := oddRequests(t, up)
	up.Kill()

	ours := NewMember(t)
	ours.Start()
	got := oddRequests(t, ours)
	var diffs []string
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			g := "(missing)"
			if i < len(got) {
				g = got[i]
			}
			diffs = append(diffs, fmt.Sprintf("upstream: %s\n    ours: %s", want[i], g))
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("%d of %d odd requests answered differently:\n%s", len(diffs), len(want), strings.Join(diffs, "\n"))
	}
	for _, line := range want {
		if strings.HasSuffix(line, "no answer") {
			t.Errorf("unanswered: %s", line)
		}
	}
	t.Logf("%d odd requests answered as upstream:\n%s", len(want), strings.Join(want, "\n"))
}
