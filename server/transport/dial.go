package transport

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// socketKey carries a unix socket's path from a request to the dialer.
type socketKey struct{}

// roundTripper sends peer requests over TCP, or over a unix socket for unix:// and unixs://
// URLs (whose host is the socket's name, as upstream's peer URLs are).
type roundTripper struct {
	tcp, unix *http.Transport
}

// NewRoundTripper is the HTTP transport every peer request uses; localAddr, when set, is the IP
// TCP connections leave from.
func NewRoundTripper(dialTimeout time.Duration, tlsCfg *tls.Config, localAddr string) http.RoundTripper {
	return newRoundTripper(dialTimeout, tlsCfg, localAddr, 0, 0)
}

// newStreamRoundTripper is the transport of the streams this member opens (to read): a dial
// timeout and TCP keep-alives, no deadline per read. Upstream's look as if they had one
// (--raft-read-timeout), but its transport dials past it, so a stream that goes quiet stays
// open until TCP gives up; its robustness tests, which blackhole a member behind a proxy until
// it falls behind, rely on that, and so ours behaves the same.
func newStreamRoundTripper(dialTimeout time.Duration, tlsCfg *tls.Config, localAddr string) http.RoundTripper {
	return newRoundTripper(dialTimeout, tlsCfg, localAddr, 0, 0)
}

func newRoundTripper(dialTimeout time.Duration, tlsCfg *tls.Config, localAddr string, rd, wr time.Duration) http.RoundTripper {
	base := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	dialer := timeoutDialer{base, rd, wr}
	tcpDialer := dialer
	if ip := net.ParseIP(localAddr); ip != nil {
		d := *base
		d.LocalAddr = &net.TCPAddr{IP: ip}
		tcpDialer = timeoutDialer{&d, rd, wr}
	}
	unixDial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		if p, ok := ctx.Value(socketKey{}).(string); ok {
			addr = p
		}
		return dialer.DialContext(ctx, "unix", addr)
	}
	return roundTripper{
		tcp:  &http.Transport{DialContext: tcpDialer.DialContext, MaxIdleConnsPerHost: 4, DisableCompression: true, TLSClientConfig: tlsCfg},
		unix: &http.Transport{DialContext: unixDial, MaxIdleConnsPerHost: 4, DisableCompression: true, TLSClientConfig: tlsCfg},
	}
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.URL.Scheme {
	case "unix", "unixs":
		r := req.Clone(context.WithValue(req.Context(), socketKey{}, req.URL.Host))
		r.URL.Scheme = "http"
		if req.URL.Scheme == "unixs" {
			r.URL.Scheme = "https"
		}
		return rt.unix.RoundTrip(r)
	}
	return rt.tcp.RoundTrip(req)
}

// timeoutDialer dials connections whose reads and writes each get a deadline (none when zero).
type timeoutDialer struct {
	d      *net.Dialer
	rd, wr time.Duration
}

func (td timeoutDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := td.d.DialContext(ctx, network, addr)
	if err != nil || td.rd == 0 && td.wr == 0 {
		return c, err
	}
	return &timeoutConn{Conn: c, rd: td.rd, wr: td.wr}, nil
}

type timeoutConn struct {
	net.Conn
	rd, wr time.Duration
}

func (c *timeoutConn) Read(b []byte) (int, error) {
	if c.rd > 0 {
		c.SetReadDeadline(time.Now().Add(c.rd))
	}
	return c.Conn.Read(b)
}

func (c *timeoutConn) Write(b []byte) (int, error) {
	if c.wr > 0 {
		c.SetWriteDeadline(time.Now().Add(c.wr))
	}
	return c.Conn.Write(b)
}
