package transport

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRoundTripperLocalAddr: peer connections leave from the given IP (SetMemberLocalAddr);
// every 127/8 address is local on Linux, so 127.0.0.2 stands for a second interface.
func TestRoundTripperLocalAddr(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		io.WriteString(w, host)
	}))
	defer srv.Close()
	for _, c := range []struct{ local, want string }{{"", "127.0.0.1"}, {"127.0.0.2", "127.0.0.2"}} {
		hc := &http.Client{Transport: NewRoundTripper(time.Second, nil, c.local)}
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := strings.TrimSpace(string(b)); got != c.want {
			t.Errorf("local address %q: server saw %s, want %s", c.local, got, c.want)
		}
	}
}
