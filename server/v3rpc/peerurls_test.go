package v3rpc

import "testing"

// TestCheckPeerURLsAsUpstream: member add and update take the peer URLs upstream's
// types.NewURLs takes, unix sockets included (upstream's e2e tests add members on them).
func TestCheckPeerURLsAsUpstream(t *testing.T) {
	for _, c := range []struct {
		urls []string
		ok   bool
	}{
		{[]string{"http://10.0.0.1:2380"}, true},
		{[]string{"https://node-a:2380", "http://10.0.0.1:2380"}, true},
		{[]string{"unix://localhost:20006"}, true},
		{[]string{"unixs://localhost:20006"}, true},
		{nil, false},
		{[]string{"ftp://10.0.0.1:2380"}, false},
		{[]string{"http://10.0.0.1"}, false},        // no port
		{[]string{"http://10.0.0.1:2380/x"}, false}, // a path
		{[]string{"10.0.0.1:2380"}, false},          // no scheme
		{[]string{"http://10.0.0.1:2380", "::"}, false},
	} {
		if err := checkPeerURLs(c.urls); (err == nil) != c.ok {
			t.Errorf("%q: %v, want ok=%v", c.urls, err, c.ok)
		}
	}
}
