package v2http

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"etcdx/server/v2store"
)

// The keys API's parameters as upstream 3.5 reads them: the key under /1, each flag, the TTL
// turned into an expiry by the proposer's clock, and each malformed parameter refused with
// upstream's code and cause.
func TestParseKeyRequest(t *testing.T) {
	now := time.Unix(1000, 0)
	r := httptest.NewRequest("PUT", "/v2/keys/a/b?prevExist=true&prevIndex=7&ttl=5&refresh=true&dir=false&recursive=true&sorted=1&quorum=true", nil)
	req, noValue, err := parseKeyRequest(r, now)
	if err != nil || noValue {
		t.Fatalf("%v %v", err, noValue)
	}
	if req.Method != "PUT" || req.Path != "/1/a/b" || req.PrevIndex != 7 || req.PrevExist == nil || !*req.PrevExist ||
		req.Refresh == nil || !*req.Refresh || !req.Recursive || !req.Sorted || !req.Quorum || req.Dir ||
		req.Expiration != now.Add(5*time.Second).UnixNano() {
		t.Errorf("parsed %+v", req)
	}
	r = httptest.NewRequest("POST", "/v2/keys/q", strings.NewReader("value=v&noValueOnSuccess=true"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req, noValue, err = parseKeyRequest(r, now)
	if err != nil || !noValue || req.Val != "v" || req.Path != "/1/q" || req.Expiration != 0 || req.PrevExist != nil {
		t.Errorf("form: %+v %v %v", req, noValue, err)
	}
	for _, c := range []struct {
		method, url string
		code        int
		cause       string
	}{
		{"PUT", "/v2/keys/k?prevIndex=x", v2store.EcodeIndexNaN, `invalid value for "prevIndex"`},
		{"GET", "/v2/keys/k?waitIndex=-1", v2store.EcodeIndexNaN, `invalid value for "waitIndex"`},
		{"GET", "/v2/keys/k?recursive=maybe", v2store.EcodeInvalidField, `invalid value for "recursive"`},
		{"PUT", "/v2/keys/k?wait=true", v2store.EcodeInvalidField, `"wait" can only be used with GET requests`},
		{"PUT", "/v2/keys/k?prevValue=", v2store.EcodePrevValueReq, `"prevValue" cannot be empty`},
		{"PUT", "/v2/keys/k?ttl=abc", v2store.EcodeTTLNaN, `invalid value for "ttl"`},
		{"PUT", "/v2/keys/k?prevExist=perhaps", v2store.EcodeInvalidField, "invalid value for prevExist"},
		{"PUT", "/v2/keys/k?refresh=true&value=v&ttl=1", v2store.EcodeRefreshValue, "A value was provided on a refresh"},
		{"PUT", "/v2/keys/k?refresh=true", v2store.EcodeRefreshTTLReq, "No TTL value set"},
		{"GET", "/v3/kv", v2store.EcodeInvalidForm, "incorrect key prefix"},
	} {
		_, _, err := parseKeyRequest(httptest.NewRequest(c.method, c.url, nil), now)
		var e *v2store.Error
		if !errors.As(err, &e) || e.ErrorCode != c.code || e.Cause != c.cause {
			t.Errorf("%s %s: %v; want %d %q", c.method, c.url, err, c.code, c.cause)
		}
	}
}

// A peer URL of a members request, with upstream's refusals.
func TestPeerURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:2380":   "",
		"unix://sock:1":           "",
		"ftp://127.0.0.1:1":       "URL scheme must be http, https, unix, or unixs: ftp://127.0.0.1:1",
		"http://127.0.0.1":        `URL address does not have the form "host:port": http://127.0.0.1`,
		"http://127.0.0.1:1/path": "URL must not contain a path: http://127.0.0.1:1/path",
	} {
		_, err := peerURL(in)
		if (err == nil) != (want == "") || err != nil && err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// TestTrimEvent: answers name keys without the /1 namespace and do not mark a refresh (as
// upstream's), and the event in the store's history is left as it was.
func TestTrimEvent(t *testing.T) {
	ev := &v2store.Event{Action: v2store.ActionSet, Refresh: true,
		Node:     &v2store.Node{Key: "/1/a", Nodes: []*v2store.Node{{Key: "/1/a/b"}}},
		PrevNode: &v2store.Node{Key: "/1/a"}}
	got := trimEvent(ev)
	if got.Refresh || got.Node.Key != "/a" || got.Node.Nodes[0].Key != "/a/b" || got.PrevNode.Key != "/a" {
		t.Fatalf("trimmed: %+v node %+v", got, got.Node)
	}
	if !ev.Refresh || ev.Node.Key != "/1/a" || ev.Node.Nodes[0].Key != "/1/a/b" {
		t.Fatalf("original changed: %+v node %+v", ev, ev.Node)
	}
}
