package e2e

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGatewayOverTLSAsUpstream: on an https client URL, where the client chooses HTTP/1.1 or
// HTTP/2 by ALPN (curl takes HTTP/2 when offered), the JSON gateway and the HTTP endpoints answer
// as upstream's on both protocols: same protocol negotiated, same status codes, same bodies apart
// from IDs and the bbolt file's layout.
func TestGatewayOverTLSAsUpstream(t *testing.T) {
	certs := NewCerts(t)
	requests := []struct{ method, path, body string }{
		{"POST", "/v3/kv/put", `{"key":"Zm9v","value":"YmFy"}`},
		{"POST", "/v3/kv/range", `{"key":"Zm9v"}`},
		{"POST", "/v3/kv/range", `{"key":"Zm9v","serializable":true,"keys_only":true}`},
		{"POST", "/v3/kv/range", `{"key":`},
		{"POST", "/v3/kv/deleterange", `{"key":"Zm9v"}`},
		{"POST", "/v3/lease/grant", `{"TTL":60,"ID":4096}`},
		{"POST", "/v3/lease/timetolive", `{"ID":4096}`},
		{"POST", "/v3/maintenance/status", `{}`},
		{"GET", "/health", ""},
		{"GET", "/readyz", ""},
		{"GET", "/v3/no/such/path", ""},
	}
	session := func(m *Member, h2 bool) []string {
		tr := &http.Transport{TLSClientConfig: certs.ClientTLS(t, true), ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
		}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		var out []string
		for _, r := range requests {
			req, err := http.NewRequest(r.method, m.ClientURL+r.path, strings.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", r.method, r.path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out = append(out, fmt.Sprintf("%s %s -> %s %d %s", r.method, r.path, resp.Proto, resp.StatusCode, withoutHeaderIDs(b)))
		}
		return out
	}
	besideUpstreamAs(t, func() *Member { return tlsMember(t, certs) }, func(t *testing.T, m *Member) []string {
		return append(session(m, false), session(m, true)...)
	})
}

// withoutHeaderIDs is a response body with the IDs and file layout that differ between two clusters removed
// from its JSON response header, re-encoded so whitespace does not count.
func withoutHeaderIDs(b []byte) string {
	var v map[string]any
	if json.Unmarshal(b, &v) != nil {
		return string(bytes.TrimSpace(b))
	}
	if h, ok := v["header"].(map[string]any); ok {
		delete(h, "cluster_id")
		delete(h, "member_id")
	}
	delete(v, "leader")      // maintenance status: the member's own ID
	delete(v, "dbSizeInUse") // pages in use: each store lays out its bbolt file its own way
	// The file's size depends on when the backend last committed and how bbolt grew it, so
	// only its shape is compared: a whole number of 4 KiB pages.
	if s, ok := v["dbSize"].(string); ok {
		var n int64
		if _, err := fmt.Sscan(s, &n); err == nil && n > 0 && n%4096 == 0 {
			v["dbSize"] = "whole pages"
		}
	}
	out, _ := json.Marshal(v)
	return string(out)
}
