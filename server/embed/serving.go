package embed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	upstreamtls "go.etcd.io/etcd/client/pkg/v3/tlsutil"
	"golang.org/x/sys/unix"

	"etcdx/server/auth"
	"etcdx/server/httpapi"
	"etcdx/server/membership"
	"etcdx/server/tlsutil"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// tlsVersion reads --tls-min-version / --tls-max-version ("" lets Go choose).
func tlsVersion(v string) (uint16, error) {
	switch v {
	case "":
		return 0, nil
	case "TLS1.2":
		return tls.VersionTLS12, nil
	case "TLS1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("unexpected TLS version %q (must be one of: TLS1.2, TLS1.3)", v)
}

// validateServing checks the serving, TLS-hardening and authentication flags.
func (c *Config) validateServing() error {
	minV, err := tlsVersion(c.TLSMinVersion)
	if err != nil {
		return err
	}
	maxV, err := tlsVersion(c.TLSMaxVersion)
	if err != nil {
		return err
	}
	if maxV != 0 && minV > maxV {
		return fmt.Errorf("min version (%s) is greater than max version (%s)", c.TLSMinVersion, c.TLSMaxVersion)
	}
	if minV == tls.VersionTLS13 && len(c.CipherSuites) > 0 {
		return errors.New("cipher suites cannot be configured when only TLS1.3 is enabled")
	}
	// Upstream's own parser (Go's names, and the short CHACHA20_POLY1305 names upstream takes);
	// none given stays nil, Go's choice (an empty list would leave HTTP/2 no suite).
	var ids []uint16
	if len(c.CipherSuites) > 0 {
		var err error
		if ids, err = upstreamtls.GetCipherSuites(c.CipherSuites); err != nil {
			return err
		}
	}
	for _, info := range []*tlsutil.Info{&c.ClientTLSInfo, &c.PeerTLSInfo} {
		info.CipherSuites, info.MinVersion, info.MaxVersion = ids, minV, maxV
	}
	if c.MaxConcurrentStreams == 0 {
		return errors.New("--max-concurrent-streams must be greater than 0")
	}
	if c.BackendBatchLimit < 0 || c.BackendBatchInterval < 0 {
		return errors.New("--backend-batch-limit and --backend-batch-interval must not be negative")
	}
	if c.MaxWals < 0 {
		return errors.New("--max-wals must not be negative (0 keeps every WAL file)")
	}
	if c.CompactionBatchLimit < 0 || c.CompactionSleepInterval < 0 {
		return errors.New("--compaction-batch-limit and --compaction-sleep-interval must not be negative")
	}
	for _, o := range c.CORS {
		if o == "*" {
			continue
		}
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("--cors: %q is not an origin URL (scheme://host[:port]) or '*'", o)
		}
	}
	return auth.CheckTokenOptions(c.AuthToken)
}

// listen binds one URL's address with the socket options asked for; a unix:// URL gets a socket
// file, replacing one a killed member left behind.
func (e *Etcd) listen(u *url.URL) (net.Listener, error) {
	if membership.IsUnix(u) {
		path := membership.SocketPath(u)
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(path) // a killed member's socket; any other file makes Listen fail instead
		}
		return net.Listen("unix", path)
	}
	host := u.Host
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			if e.cfg.SocketReuseAddress {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			}
			if serr == nil && e.cfg.SocketReusePort {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", host)
}

// grpcOptions are the flag-driven gRPC server settings.
func (c *Config) grpcOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(c.MaxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: c.GRPCKeepAliveMinTime, PermitWithoutStream: false}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: c.GRPCKeepAliveInterval, Timeout: c.GRPCKeepAliveTimeout}),
	}
}

// wrapHTTP adds what the flags ask of client HTTP serving: the /debug/pprof/ endpoints,
// the Host header allow-list and CORS headers.
func (c *Config) wrapHTTP(h http.Handler, lg *slog.Logger) http.Handler {
	if c.EnablePprof {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		mux.Handle("/", h)
		h = mux
	}
	hosts := set(c.HostWhitelist)
	origins := set(c.CORS)
	next := h
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As upstream: plain-HTTP requests must name an allowed host (DNS rebinding, CVE-2018-5702).
		if r.TLS == nil && !hosts["*"] {
			host := r.Host
			if hh, _, err := net.SplitHostPort(host); err == nil {
				host = hh
			}
			if !hosts[host] {
				lg.Warn("rejecting HTTP request to prevent DNS rebinding attacks", "host", host)
				http.Error(w, fmt.Sprintf("etcd: the Host header %q is not allowed; use TLS or add it with --host-whitelist", host), http.StatusMisdirectedRequest)
				return
			}
		}
		if origins["*"] {
			corsHeaders(w, "*")
		} else if o := r.Header.Get("Origin"); o != "" && origins[o] {
			corsHeaders(w, o)
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusOK)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v3beta/") {
			r.URL.Path = "/v3/" + strings.TrimPrefix(r.URL.Path, "/v3beta/")
		}
		next.ServeHTTP(w, r)
	})
}

func corsHeaders(w http.ResponseWriter, origin string) {
	w.Header().Add("Access-Control-Allow-Methods", "POST, GET, OPTIONS, PUT, DELETE")
	w.Header().Add("Access-Control-Allow-Origin", origin)
	w.Header().Add("Access-Control-Allow-Headers", "accept, content-type, authorization")
}

func set(list []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range list {
		m[s] = true
	}
	return m
}

// selfCerts makes (or reuses) the self-signed certificates --auto-tls and --peer-auto-tls ask
// for, under <data-dir>/fixtures as upstream, for the hosts of the listen URLs.
func (c *Config) selfCerts(lg *slog.Logger) error {
	for _, side := range []struct {
		info *tlsutil.Info
		name string
		flag string
		urls []string
	}{{&c.ClientTLSInfo, "client", "auto-tls", append(append([]string(nil), c.ListenClientUrls...), c.ListenClientHTTPUrls...)},
		{&c.PeerTLSInfo, "peer", "peer-auto-tls", c.ListenPeerUrls}} {
		if !side.info.AutoTLS {
			continue
		}
		if !side.info.Empty() {
			lg.Warn(fmt.Sprintf("ignoring %s auto TLS since certs given", side.name))
			continue
		}
		var hosts []string
		for _, raw := range side.urls {
			if u, err := url.Parse(raw); err == nil {
				hosts = append(hosts, u.Host)
			}
		}
		gen, err := tlsutil.SelfCert(filepath.Join(c.Dir, "fixtures", side.name), hosts, c.SelfSignedCertValidity)
		if err != nil {
			return fmt.Errorf("--%s: %w", side.flag, err)
		}
		side.info.CertFile, side.info.KeyFile, side.info.SelfSigned = gen.CertFile, gen.KeyFile, true
	}
	return nil
}

// handshakeLog turns net/http's error lines into structured ones: a refused TLS handshake is
// upstream's "rejected connection on client endpoint" (or peer endpoint) warning.
func handshakeLog(lg *slog.Logger, endpoint string) *log.Logger {
	return log.New(handshakeWriter{lg, "rejected connection on " + endpoint + " endpoint"}, "", 0)
}

type handshakeWriter struct {
	lg  *slog.Logger
	msg string
}

func (w handshakeWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if rest, ok := strings.CutPrefix(line, "http: TLS handshake error from "); ok {
		addr, reason, _ := strings.Cut(rest, ": ")
		level := slog.LevelWarn
		if reason == "EOF" {
			level = slog.LevelDebug // probes that connect and leave, as upstream
		}
		w.lg.Log(context.Background(), level, w.msg, "remote-addr", addr, "error", reason)
		return len(p), nil
	}
	w.lg.Warn("http server error", "error", line)
	return len(p), nil
}

// memberLocalAddr is the SetMemberLocalAddr gate's choice: the first advertised peer URL whose
// host is an IP address that is neither loopback nor unspecified ("" when none is), for the
// member to dial its peers from.
func memberLocalAddr(advertisePeerURLs []string) string {
	for _, raw := range advertisePeerURLs {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if addr, err := netip.ParseAddr(u.Hostname()); err == nil && !addr.IsLoopback() && !addr.IsUnspecified() {
			return addr.String()
		}
	}
	return ""
}

// httpOptions are the client listeners' HTTP APIs as the flags ask.
func (e *Etcd) httpOptions() httpapi.Options {
	return httpapi.Options{Gateway: e.cfg.EnableGRPCGateway, V2: e.cfg.EnableV2, ClientCertAuth: e.cfg.ClientTLSInfo.ClientCertAuth}
}
