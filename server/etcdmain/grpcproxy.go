package etcdmain

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/soheilhy/cmux"
	"github.com/spf13/cobra"
	upstreamtls "go.etcd.io/etcd/client/pkg/v3/tlsutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"etcdx/server/grpcproxy"
	"etcdx/server/logutil"
	"etcdx/server/tlsutil"
)

// proxyFlags are `etcd grpc-proxy start`'s flags, upstream's names and defaults.
type proxyFlags struct {
	listenAddr, advertiseClientURL, dataDir                 string
	endpoints, cipherSuites                                 []string
	autoSync, dialKeepAliveTime, dialKeepAliveTimeout       time.Duration
	grpcKeepAliveInterval, grpcKeepAliveMinTime             time.Duration
	grpcKeepAliveTimeout                                    time.Duration
	cert, key, cacert                                       string
	listenCert, listenKey, listenCA, crlFile                string
	tlsMin, tlsMax, metricsAddr                             string
	namespace, leasingPrefix, resolverPrefix, srv, srvName  string
	insecureSkipVerify, autoTLS, debug, pprof, grpcLogging  bool
	serializableOrdering, permitWithoutStream, insecureDisc bool
	resolverTTL, maxSendBytes, maxRecvBytes                 int
	maxConcurrentStreams                                    uint32
	certValidity                                            uint
}

func grpcProxyCommand(stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "grpc-proxy <subcommand>", Short: "grpc-proxy related command"}
	var f proxyFlags
	start := &cobra.Command{
		Use:   "start",
		Short: "start the grpc proxy",
		Run:   func(*cobra.Command, []string) { os.Exit(startGRPCProxy(stderr, f)) },
	}
	fs := start.Flags()
	fs.StringVar(&f.listenAddr, "listen-addr", "127.0.0.1:23790", "listen address")
	fs.StringVar(&f.srv, "discovery-srv", "", "domain name to query for SRV records describing cluster endpoints")
	fs.StringVar(&f.srvName, "discovery-srv-name", "", "service name to query when using DNS discovery")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "listen for endpoint /metrics requests on an additional interface")
	fs.BoolVar(&f.insecureDisc, "insecure-discovery", false, "accept insecure SRV records")
	fs.StringSliceVar(&f.endpoints, "endpoints", []string{"127.0.0.1:2379"}, "comma separated etcd cluster endpoints")
	fs.DurationVar(&f.autoSync, "endpoints-auto-sync-interval", 0, "etcd endpoints auto sync interval (disabled by default)")
	fs.StringVar(&f.advertiseClientURL, "advertise-client-url", "127.0.0.1:23790", "advertise address to register (must be reachable by client)")
	fs.StringVar(&f.resolverPrefix, "resolver-prefix", "", "prefix to use for registering proxy (must be shared with other grpc-proxy members)")
	fs.IntVar(&f.resolverTTL, "resolver-ttl", 0, "specify TTL, in seconds, when registering proxy endpoints")
	fs.StringVar(&f.namespace, "namespace", "", "string to prefix to all keys for namespacing requests")
	fs.BoolVar(&f.pprof, "enable-pprof", false, `Enable runtime profiling data via HTTP server. Address is at client URL + "/debug/pprof/"`)
	fs.StringVar(&f.dataDir, "data-dir", "default.proxy", "Data directory for persistent data")
	fs.IntVar(&f.maxSendBytes, "max-send-bytes", 1536*1024, "message send limits in bytes (default value is 1.5 MiB)")
	fs.IntVar(&f.maxRecvBytes, "max-recv-bytes", math.MaxInt32, "message receive limits in bytes (default value is math.MaxInt32)")
	fs.DurationVar(&f.dialKeepAliveTime, "dial-keepalive-time", 0, "keepalive time for client(grpc-proxy) connections (default 0, disable).")
	fs.DurationVar(&f.dialKeepAliveTimeout, "dial-keepalive-timeout", 20*time.Second, "keepalive timeout for client(grpc-proxy) connections (default 20s).")
	fs.BoolVar(&f.permitWithoutStream, "permit-without-stream", false, "Enable client(grpc-proxy) to send keepalive pings even with no active RPCs.")
	fs.DurationVar(&f.grpcKeepAliveMinTime, "grpc-keepalive-min-time", 5*time.Second, "Minimum interval duration that a client should wait before pinging proxy.")
	fs.DurationVar(&f.grpcKeepAliveInterval, "grpc-keepalive-interval", 2*time.Hour, "Frequency duration of server-to-client ping to check if a connection is alive (0 to disable).")
	fs.DurationVar(&f.grpcKeepAliveTimeout, "grpc-keepalive-timeout", 20*time.Second, "Additional duration of wait before closing a non-responsive connection (0 to disable).")
	fs.StringVar(&f.cert, "cert", "", "identify secure connections with etcd servers using this TLS certificate file")
	fs.StringVar(&f.key, "key", "", "identify secure connections with etcd servers using this TLS key file")
	fs.StringVar(&f.cacert, "cacert", "", "verify certificates of TLS-enabled secure etcd servers using this CA bundle")
	fs.BoolVar(&f.insecureSkipVerify, "insecure-skip-tls-verify", false, "skip authentication of etcd server TLS certificates (CAUTION: this option should be enabled only for testing purposes)")
	fs.StringVar(&f.listenCert, "cert-file", "", "identify secure connections to the proxy using this TLS certificate file")
	fs.StringVar(&f.listenKey, "key-file", "", "identify secure connections to the proxy using this TLS key file")
	fs.StringVar(&f.listenCA, "trusted-ca-file", "", "verify certificates of TLS-enabled secure proxy using this CA bundle")
	fs.StringSliceVar(&f.cipherSuites, "listen-cipher-suites", nil, "Comma-separated list of supported TLS cipher suites between client/proxy (empty will be auto-populated by Go).")
	fs.StringVar(&f.crlFile, "client-crl-file", "", "proxy client certificate revocation list file.")
	fs.BoolVar(&f.autoTLS, "auto-tls", false, "proxy TLS using generated certificates")
	fs.UintVar(&f.certValidity, "self-signed-cert-validity", 1, "The validity period of the proxy certificates, unit is year")
	fs.StringVar(&f.tlsMin, "tls-min-version", "TLS1.2", "Minimum TLS version supported by grpc proxy. Possible values: TLS1.2, TLS1.3.")
	fs.StringVar(&f.tlsMax, "tls-max-version", "", "Maximum TLS version supported by grpc proxy. Possible values: TLS1.2, TLS1.3 (empty defers to Go).")
	fs.StringVar(&f.leasingPrefix, "experimental-leasing-prefix", "", "leasing metadata prefix for disconnected linearized reads.")
	fs.BoolVar(&f.debug, "debug", false, "Enable debug-level logging for grpc-proxy.")
	fs.Uint32Var(&f.maxConcurrentStreams, "max-concurrent-streams", math.MaxUint32, "Maximum concurrent streams that each client can open at a time.")
	fs.BoolVar(&f.serializableOrdering, "experimental-serializable-ordering", false, "Ensure serializable reads have monotonically increasing store revisions across endpoints.")
	fs.BoolVar(&f.grpcLogging, "experimental-enable-grpc-logging", false, "logging all grpc requests and responses")
	cmd.AddCommand(start)
	return cmd
}

// unsupportedProxyFlags are upstream's proxy features this one does not have: each is refused
// by name rather than ignored (a namespace ignored would mix the keyspaces).
func (f proxyFlags) unsupported() error {
	for name, set := range map[string]bool{"--namespace": f.namespace != "", "--experimental-leasing-prefix": f.leasingPrefix != "",
		"--resolver-prefix": f.resolverPrefix != "", "--discovery-srv": f.srv != "", "--experimental-serializable-ordering": f.serializableOrdering} {
		if set {
			return fmt.Errorf("%s is not supported by this etcd's grpc-proxy (it forwards every call as it is)", name)
		}
	}
	return nil
}

// listenTLS is the proxy's serving TLS from the flags, nil without any.
func (f proxyFlags) listenTLS(lg *slog.Logger) (*tls.Config, error) {
	info := tlsutil.Info{CertFile: f.listenCert, KeyFile: f.listenKey, TrustedCAFile: f.listenCA, CRLFile: f.crlFile, ClientCertAuth: f.listenCA != ""}
	if info.CertFile == "" && info.KeyFile == "" {
		if !f.autoTLS {
			return nil, nil
		}
		self, err := tlsutil.SelfCert(filepath.Join(f.dataDir, "fixtures", "proxy"), []string{f.listenAddr}, f.certValidity)
		if err != nil {
			return nil, fmt.Errorf("--auto-tls: %w", err)
		}
		info.CertFile, info.KeyFile, info.SelfSigned = self.CertFile, self.KeyFile, true
	}
	var err error
	if len(f.cipherSuites) > 0 {
		if info.CipherSuites, err = upstreamtls.GetCipherSuites(f.cipherSuites); err != nil {
			return nil, err
		}
	}
	if f.tlsMin != "" {
		if info.MinVersion, err = upstreamtls.GetTLSVersion(f.tlsMin); err != nil {
			return nil, err
		}
	}
	if f.tlsMax != "" {
		if info.MaxVersion, err = upstreamtls.GetTLSVersion(f.tlsMax); err != nil {
			return nil, err
		}
	}
	lg.Info("gRPC proxy server TLS", "tls-info", fmt.Sprintf("cert = %s, key = %s, trusted-ca = %s, crl-file = %s", info.CertFile, info.KeyFile, info.TrustedCAFile, info.CRLFile))
	// A client certificate is checked as on a member's client port: signed by the CA, names not
	// matched against the address.
	info.SkipClientSANVerify = true
	return info.ServerConfig("h2", "http/1.1")
}

// backendTLS is how the proxy dials the cluster, nil for plain connections.
func (f proxyFlags) backendTLS() (*tls.Config, error) {
	if f.cert == "" && f.key == "" && f.cacert == "" && !f.insecureSkipVerify {
		return nil, nil
	}
	info := tlsutil.Info{ClientCertFile: f.cert, ClientKeyFile: f.key, TrustedCAFile: f.cacert}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, err
	}
	// As upstream: the members would take a common name as the auth user of every call the
	// proxy forwards, whoever the caller.
	for _, c := range cfg.Certificates {
		if len(c.Certificate) == 0 {
			continue
		}
		// the leaf only
		if leaf, err := x509.ParseCertificate(c.Certificate[0]); err == nil && leaf.Subject.CommonName != "" {
			return nil, fmt.Errorf("cert has non empty Common Name (%s): %s", leaf.Subject.CommonName, f.cert)
		}
	}
	cfg.InsecureSkipVerify = f.insecureSkipVerify
	return cfg, nil
}

func startGRPCProxy(stderr io.Writer, f proxyFlags) int {
	lc := logutil.Default()
	if f.debug {
		lc.Level = "debug"
	}
	built, err := lc.Build()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer built.Close()
	lg := built.Logger
	fail := func(msg string, err error) int {
		lg.Error(msg, "error", err.Error())
		return 1
	}
	if err := f.unsupported(); err != nil {
		return fail("cannot start the gRPC proxy", err)
	}
	srvTLS, err := f.listenTLS(lg)
	if err != nil {
		return fail("failed to set up the proxy's TLS", err)
	}
	cliTLS, err := f.backendTLS()
	if err != nil {
		return fail("failed to set up TLS to the cluster", err)
	}
	if f.insecureSkipVerify {
		lg.Warn("--insecure-skip-tls-verify was given, this grpc proxy process skips authentication of etcd server TLS certificates. This option should be enabled only for testing purposes.")
	}
	lg.Info("create proxy client", "grpcProxyAdvertiseClientURL", f.advertiseClientURL)
	client, err := clientv3.New(clientv3.Config{Endpoints: f.endpoints, AutoSyncInterval: f.autoSync, DialTimeout: 5 * time.Second,
		DialKeepAliveTime: f.dialKeepAliveTime, DialKeepAliveTimeout: f.dialKeepAliveTimeout, PermitWithoutStream: f.permitWithoutStream,
		TLS: cliTLS, Logger: zap.NewNop(), MaxCallSendMsgSize: f.maxSendBytes, MaxCallRecvMsgSize: f.maxRecvBytes})
	if err != nil {
		return fail("failed to create the client to the cluster", err)
	}
	defer client.Close()

	l, err := net.Listen("tcp", f.listenAddr)
	if err != nil {
		return fail("failed to listen", err)
	}
	if srvTLS != nil {
		l = tls.NewListener(l, srvTLS)
	}
	lg.Info("listening for gRPC proxy client requests", "address", f.listenAddr)
	m := cmux.New(l)
	grpcL := m.Match(cmux.HTTP2())
	httpL := m.Match(cmux.Any())

	opts := append(grpcproxy.ServerOptions(client.ActiveConnection()),
		grpc.MaxRecvMsgSize(f.maxRecvBytes), grpc.MaxSendMsgSize(f.maxSendBytes), grpc.MaxConcurrentStreams(f.maxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: f.grpcKeepAliveMinTime, PermitWithoutStream: false}))
	if f.grpcKeepAliveInterval > 0 || f.grpcKeepAliveTimeout > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{Time: f.grpcKeepAliveInterval, Timeout: f.grpcKeepAliveTimeout}))
	}
	gs := grpc.NewServer(opts...)
	hs := &http.Server{Handler: proxyHTTP(lg, client, f.pprof), ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 4)
	go func() { errc <- gs.Serve(grpcL) }()
	go func() { errc <- hs.Serve(httpL) }()
	go func() { errc <- m.Serve() }()
	if f.metricsAddr != "" {
		ml, err := net.Listen("tcp", strings.TrimPrefix(strings.TrimPrefix(f.metricsAddr, "http://"), "https://"))
		if err != nil {
			return fail("failed to listen for metrics", err)
		}
		lg.Info("gRPC proxy listening for metrics", "address", f.metricsAddr)
		go func() {
			errc <- (&http.Server{Handler: proxyHTTP(lg, client, false), ReadHeaderTimeout: 10 * time.Second}).Serve(ml)
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.autoSync > 0 {
		go logEndpointChanges(ctx, lg, client, f.autoSync)
	}
	lg.Info("started gRPC proxy", "address", f.listenAddr)
	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
			lg.Error("gRPC proxy stopped", "error", err.Error())
		}
	}
	gs.Stop()
	hs.Close()
	l.Close()
	lg.Info("stop listening gRPC proxy client requests", "address", f.listenAddr)
	return 0
}

// logEndpointChanges logs the cluster endpoints the client syncs to, when they change.
func logEndpointChanges(ctx context.Context, lg *slog.Logger, c *clientv3.Client, every time.Duration) {
	last := slices.Clone(c.Endpoints())
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if eps := c.Endpoints(); !slices.Equal(eps, last) {
			lg.Info("updated the cluster endpoints", "endpoints", eps)
			last = slices.Clone(eps)
		}
	}
}

// proxyHTTP serves upstream's proxy HTTP endpoints: /health (the cluster, through the
// proxy's client), /proxy/health (the same path the proxy's calls take), /metrics and
// /proxy/metrics (the proxy's own), and pprof when asked.
func proxyHTTP(lg *slog.Logger, c *clientv3.Client, withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", http.NotFound)
	health := func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		h := struct {
			Health string `json:"health"`
			Reason string `json:"reason"`
		}{Health: "true"}
		if _, err := c.Get(ctx, "a"); err != nil && !strings.Contains(err.Error(), "permission denied") {
			h.Health, h.Reason = "false", "GET ERROR:"+err.Error()
			lg.Warn("serving "+r.URL.Path+" false", "error", err.Error())
		}
		w.Header().Set("Content-Type", "application/json")
		if h.Health != "true" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(h)
	}
	mux.HandleFunc("/health", health)
	mux.HandleFunc("/proxy/health", health)
	mux.Handle("/metrics", promhttp.Handler())
	mux.Handle("/proxy/metrics", promhttp.Handler())
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
