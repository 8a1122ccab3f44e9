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
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	tcpDialer := dialer
	if ip := net.ParseIP(localAddr); ip != nil {
		d := *dialer
		d.LocalAddr = &net.TCPAddr{IP: ip}
		tcpDialer = &d
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
