package embed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/soheilhy/cmux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/server/compactor"
	"etcdx/server/etcdserver"
	"etcdx/server/features"
	"etcdx/server/httpapi"
	"etcdx/server/logutil"
	"etcdx/server/membership"
	"etcdx/server/recipes"
	"etcdx/server/tlsutil"
	"etcdx/server/tracing"
	"etcdx/server/transport"
	"etcdx/server/v3rpc"
	"etcdx/server/version"
)

// Config mirrors the etcd command line; field names follow upstream's config file keys.
type Config struct {
	Name                 string
	Dir                  string
	WalDir               string // the WAL's own directory ("": member/wal in Dir)
	ListenClientUrls     []string
	ListenClientHTTPUrls []string
	AdvertiseClientUrls  []string
	ListenPeerUrls       []string
	AdvertisePeerUrls    []string
	ListenMetricsUrls    []string
	InitialCluster       string
	InitialClusterState  string
	InitialClusterToken  string
	// DiscoveryCfg bootstraps a new cluster through v3 discovery instead of InitialCluster.
	DiscoveryCfg DiscoveryConfig
	// Durl bootstraps a new cluster through v2 discovery (--discovery, until 3.6), through the
	// HTTP proxy DProxy when set (--discovery-proxy).
	Durl, DProxy    string
	ForceNewCluster bool

	SnapshotCount uint64
	// SnapshotCatchUpEntries is how much raft log a snapshot leaves behind for slow followers.
	SnapshotCatchUpEntries uint64
	// MaxSnapshots and MaxWals are how many raft snapshot and WAL files to keep (0: all).
	MaxSnapshots int
	MaxWals      int
	// MaxLearners is how many learners the cluster may have.
	MaxLearners int
	// BootstrapDefragThresholdMegabytes defragments the backend at start when at least this
	// much of it is free (0: never).
	BootstrapDefragThresholdMegabytes uint
	TickMs                            uint
	ElectionMs                        uint
	InitialElectionTickAdvance        bool
	PreVote                           bool
	QuotaBackendBytes                 int64
	BackendBatchInterval              time.Duration
	BackendBatchLimit                 int
	BackendFreelistType               string
	UnsafeNoFsync                     bool
	MemoryMlock                       bool
	MaxRequestBytes                   uint
	// StrictReconfigCheck refuses membership changes that would lose quorum (upstream default).
	StrictReconfigCheck bool
	MaxTxnOps           uint

	// gRPC and HTTP serving.
	MaxConcurrentStreams  uint32
	GRPCKeepAliveMinTime  time.Duration
	GRPCKeepAliveInterval time.Duration
	GRPCKeepAliveTimeout  time.Duration
	SocketReusePort       bool
	SocketReuseAddress    bool
	EnableGRPCGateway     bool
	// EnableV2 serves upstream 3.5's v2 API (--enable-v2; level 3.5 only).
	EnableV2 bool
	// V2Deprecation is the v2 store's deprecation stage (--v2-deprecation): at 3.5 "not-yet"
	// by default; from "write-only" on, custom v2 content in the data dir stops the start.
	V2Deprecation    string
	EnablePprof      bool
	Metrics          string // basic or extensive
	CORS             []string
	HostWhitelist    []string
	RaftReadTimeout  time.Duration
	RaftWriteTimeout time.Duration

	AutoCompactionMode      string
	AutoCompactionRetention string
	CompactionBatchLimit    int
	CompactionSleepInterval time.Duration

	WatchProgressNotifyInterval time.Duration
	LeaseCheckpointInterval     time.Duration
	DowngradeCheckTime          time.Duration
	WarningApplyDuration        time.Duration
	WarningUnaryRequestDuration time.Duration
	CorruptCheckTime            time.Duration
	CompactHashCheckTime        time.Duration

	// ClientTLSInfo secures https client (and metrics) URLs; PeerTLSInfo secures peer traffic.
	ClientTLSInfo          tlsutil.Info
	PeerTLSInfo            tlsutil.Info
	SelfSignedCertValidity uint
	CipherSuites           []string
	TLSMinVersion          string
	TLSMaxVersion          string

	// Authentication settings, checked now and used once authentication exists.
	AuthToken    string
	BcryptCost   uint
	AuthTokenTTL uint

	Tracing  tracing.Config
	Features features.Gates

	// Log configures the logger; Logger, when set, is used instead.
	Log    logutil.Config
	Logger *slog.Logger
}

// Upstream defaults (those that name a member are membership's, shared with etcdutl).
const (
	DefaultName                = membership.DefaultName
	DefaultListenClientURLs    = "http://localhost:2379"
	DefaultListenPeerURLs      = membership.DefaultPeerURL
	DefaultInitialClusterState = "new"
	DefaultInitialClusterToken = membership.DefaultToken
	DefaultMaxWals             = 5
)

// NewConfig returns upstream etcd's defaults at the level this binary implements.
func NewConfig() *Config {
	c := newConfig()
	if version.Local().Less(version.V3_6) {
		c.SnapshotCount = 100000 // 3.5's default; 3.6 lowered it
	}
	return c
}

func newConfig() *Config {
	return &Config{
		Name:                        DefaultName,
		ListenClientUrls:            []string{DefaultListenClientURLs},
		AdvertiseClientUrls:         []string{DefaultListenClientURLs},
		ListenPeerUrls:              []string{DefaultListenPeerURLs},
		AdvertisePeerUrls:           []string{DefaultListenPeerURLs},
		InitialClusterState:         DefaultInitialClusterState,
		InitialClusterToken:         DefaultInitialClusterToken,
		SnapshotCount:               etcdserver.DefaultSnapshotCount,
		SnapshotCatchUpEntries:      etcdserver.DefaultSnapshotCatchUpEntries,
		MaxSnapshots:                etcdserver.DefaultMaxSnapshots,
		MaxWals:                     DefaultMaxWals,
		MaxLearners:                 membership.DefaultMaxLearners,
		TickMs:                      100,
		ElectionMs:                  1000,
		InitialElectionTickAdvance:  true,
		PreVote:                     true,
		BackendFreelistType:         "map",
		MaxRequestBytes:             etcdserver.DefaultMaxRequestBytes,
		StrictReconfigCheck:         true,
		MaxTxnOps:                   etcdserver.DefaultMaxTxnOps,
		MaxConcurrentStreams:        math.MaxUint32,
		GRPCKeepAliveMinTime:        5 * time.Second,
		GRPCKeepAliveInterval:       2 * time.Hour,
		GRPCKeepAliveTimeout:        20 * time.Second,
		EnableGRPCGateway:           true,
		Metrics:                     "basic",
		CORS:                        []string{"*"},
		HostWhitelist:               []string{"*"},
		RaftReadTimeout:             5 * time.Second,
		RaftWriteTimeout:            5 * time.Second,
		AutoCompactionMode:          "periodic",
		CompactionBatchLimit:        1000,
		CompactionSleepInterval:     10 * time.Millisecond,
		WatchProgressNotifyInterval: 10 * time.Minute,
		LeaseCheckpointInterval:     etcdserver.DefaultLeaseCheckpointInterval,
		DowngradeCheckTime:          5 * time.Second,
		WarningApplyDuration:        100 * time.Millisecond,
		WarningUnaryRequestDuration: 300 * time.Millisecond,
		CompactHashCheckTime:        time.Minute,
		SelfSignedCertValidity:      1,
		TLSMinVersion:               "TLS1.2",
		AuthToken:                   "simple",
		BcryptCost:                  10,
		AuthTokenTTL:                300,
		Tracing:                     tracing.Config{Address: "localhost:4317", ServiceName: "etcd"},
		Log:                         logutil.Default(),
		DiscoveryCfg: DiscoveryConfig{ConfigSpec: clientv3.ConfigSpec{
			DialTimeout: 2 * time.Second, RequestTimeout: 5 * time.Second,
			KeepAliveTime: 2 * time.Second, KeepAliveTimeout: 6 * time.Second,
			Secure: &clientv3.SecureConfig{InsecureTransport: true}, Auth: &clientv3.AuthConfig{},
		}},
	}
}

// InitialClusterFromName is what upstream uses when --initial-cluster is not given.
func (c *Config) InitialClusterFromName(name string) string {
	var parts []string
	for _, u := range c.AdvertisePeerUrls {
		parts = append(parts, name+"="+u)
	}
	return strings.Join(parts, ",")
}

// Validate checks the configuration the way upstream reports problems.
func (c *Config) Validate() error {
	if c.Dir == "" {
		c.Dir = c.Name + ".etcd"
	}
	if err := c.DiscoveryCfg.validate(c.InitialCluster); err != nil {
		return err
	}
	if c.Durl != "" && (c.InitialCluster != "" || c.DiscoveryCfg.enabled()) {
		return ErrConflictBootstrapFlags
	}
	if c.MaxSnapshots < 0 {
		return fmt.Errorf("--max-snapshots must not be negative (0 keeps every snapshot file)")
	}
	if c.MaxLearners < 1 {
		return fmt.Errorf("--max-learners: %d is invalid, value must be greater than 0", c.MaxLearners)
	}
	if c.InitialCluster == "" && !c.DiscoveryCfg.enabled() && c.Durl == "" {
		c.InitialCluster = c.InitialClusterFromName(c.Name)
	}
	for _, group := range []struct {
		flag string
		urls []string
	}{{"listen-client-urls", c.ListenClientUrls}, {"listen-client-http-urls", c.ListenClientHTTPUrls}, {"advertise-client-urls", c.AdvertiseClientUrls},
		{"listen-peer-urls", c.ListenPeerUrls}, {"initial-advertise-peer-urls", c.AdvertisePeerUrls},
		{"listen-metrics-urls", c.ListenMetricsUrls}} {
		for _, u := range group.urls {
			if _, err := membership.ParseURL(u); err != nil {
				return fmt.Errorf("--%s: %w", group.flag, err)
			}
		}
	}
	if err := c.ClientTLSInfo.Validate(""); err != nil {
		return err
	}
	if err := c.PeerTLSInfo.Validate("peer-"); err != nil {
		return err
	}
	// An https URL without certificates to serve it: upstream's texts, which its tests and
	// operators' scripts look for.
	noClientTLS := c.ClientTLSInfo.Empty() && !c.ClientTLSInfo.AutoTLS
	for _, u := range append(append([]string(nil), c.ListenClientUrls...), c.ListenClientHTTPUrls...) {
		if strings.HasPrefix(u, "https://") && noClientTLS {
			return fmt.Errorf("TLS key/cert (--cert-file, --key-file) must be provided for client url %s with HTTPS scheme", u)
		}
	}
	for _, u := range c.ListenMetricsUrls {
		if strings.HasPrefix(u, "https://") && noClientTLS {
			return ErrMissingClientTLSInfoForMetricsURL
		}
	}
	for _, u := range c.ListenPeerUrls {
		if strings.HasPrefix(u, "https://") && c.PeerTLSInfo.Empty() && !c.PeerTLSInfo.AutoTLS {
			return fmt.Errorf("cannot listen on TLS for %s: KeyFile and CertFile are not presented", strings.TrimPrefix(u, "https://"))
		}
	}
	if c.InitialClusterState != "new" && c.InitialClusterState != "existing" {
		return fmt.Errorf("--initial-cluster-state: unexpected value %q (want new or existing)", c.InitialClusterState)
	}
	if c.TickMs == 0 {
		return fmt.Errorf("--heartbeat-interval must be greater than 0")
	}
	if 5*c.TickMs > c.ElectionMs {
		return fmt.Errorf("--election-timeout[%vms] should be at least as 5 times as --heartbeat-interval[%vms]", c.ElectionMs, c.TickMs)
	}
	if c.ElectionMs > 50000 {
		return fmt.Errorf("--election-timeout[%vms] is too long, and should be set less than 50000ms", c.ElectionMs)
	}
	if c.LeaseCheckpointInterval < 0 {
		return fmt.Errorf("--lease-checkpoint-interval must not be negative")
	}
	if c.QuotaBackendBytes < 0 {
		return fmt.Errorf("--quota-backend-bytes must not be negative")
	}
	if _, _, err := compactor.ParseRetention(c.AutoCompactionMode, c.AutoCompactionRetention); err != nil {
		return fmt.Errorf("--auto-compaction-retention: %w", err)
	}
	if c.Logger == nil {
		if err := c.Log.Validate(); err != nil {
			return err
		}
	}
	if err := c.validateServing(); err != nil {
		return err
	}
	if err := c.Tracing.Validate(); err != nil {
		return err
	}
	if c.DiscoveryCfg.enabled() || c.Durl != "" {
		return nil
	}
	if _, err := membership.ParseInitialCluster(c.InitialCluster); err != nil {
		return fmt.Errorf("--initial-cluster: %w", err)
	}
	return nil
}

// Etcd is a running member with its listeners.
type Etcd struct {
	Server  *etcdserver.Server
	cfg     *Config
	log     *slog.Logger
	clients []net.Listener
	// httpClients are --listen-client-http-urls: HTTP only, and then clients' gRPC only.
	httpClients []net.Listener
	peers       []net.Listener
	metrics     []net.Listener
	// secure records, per listener, whether its URL is https.
	secure map[net.Listener]bool
	// shared are the sockets of addresses named both http and https (upstream serves both on
	// one port): each is split by connection into the two listeners the groups above hold.
	shared []net.Listener

	grpcServers []*grpc.Server
	httpServers []*http.Server
	// peerServers carry raft streams: they stay up while clients drain and close after the
	// member stops (a graceful shutdown would wait for streams that never end).
	peerServers []*http.Server
	// tracer exports spans when --enable-distributed-tracing is on.
	tracer *tracing.Tracer
	// selfConns are the gateway's connections to this member's own listeners.
	selfConns []*grpc.ClientConn
	// recipes serve the lock and election services, one per client listener.
	recipes []*recipes.Services

	errc      chan error
	closeOnce sync.Once
}

// StartEtcd validates cfg, opens the member and starts serving.
func StartEtcd(cfg *Config) (e *Etcd, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lg := cfg.Logger
	var built *logutil.Logger
	if lg == nil {
		if built, err = cfg.Log.Build(); err != nil {
			return nil, err
		}
		lg = built.Logger
	}
	if err := cfg.selfCerts(lg); err != nil {
		return nil, err
	}
	started := &Etcd{cfg: cfg, log: lg, errc: make(chan error, 16), secure: map[net.Listener]bool{}}
	e = started
	defer func() {
		if err != nil {
			started.closeListeners() // e itself is nil on the error returns
		}
	}()
	// Listen before opening data so a port clash fails fast without touching the data dir.
	if e.peers, err = e.listenAll(cfg.ListenPeerUrls); err != nil {
		return nil, fmt.Errorf("listen on peer URLs: %w", err)
	}
	if e.clients, err = e.listenAll(cfg.ListenClientUrls); err != nil {
		return nil, fmt.Errorf("listen on client URLs: %w", err)
	}
	if e.httpClients, err = e.listenAll(cfg.ListenClientHTTPUrls); err != nil {
		return nil, fmt.Errorf("listen on client HTTP URLs: %w", err)
	}
	if e.metrics, err = e.listenAll(cfg.ListenMetricsUrls); err != nil {
		return nil, fmt.Errorf("listen on metrics URLs: %w", err)
	}
	var peerClientTLS *tls.Config
	if !cfg.PeerTLSInfo.Empty() || cfg.PeerTLSInfo.TrustedCAFile != "" {
		if peerClientTLS, err = cfg.PeerTLSInfo.ClientConfig(); err != nil {
			return nil, fmt.Errorf("peer TLS: %w", err)
		}
	}
	ic, _ := membership.ParseInitialCluster(cfg.InitialCluster)
	token := cfg.InitialClusterToken
	var discover func(context.Context, uint64) (map[string][]string, error)
	if cfg.DiscoveryCfg.enabled() {
		// As upstream: the cluster starts as this member alone, and the discovery token is the
		// cluster token, so member and cluster IDs derive from it.
		self := append([]string(nil), cfg.AdvertisePeerUrls...)
		sort.Strings(self)
		ic = map[string][]string{cfg.Name: self}
		token = cfg.DiscoveryCfg.Token
		discover = cfg.DiscoveryCfg.joiner(cfg.Name, self, lg)
	}
	protocol := "v3"
	if cfg.Durl != "" {
		self := append([]string(nil), cfg.AdvertisePeerUrls...)
		sort.Strings(self)
		ic = map[string][]string{cfg.Name: self}
		token = cfg.Durl // as upstream: the discovery URL is the cluster token
		discover, protocol = v2Joiner(cfg.Durl, cfg.DProxy, cfg.Name, self, lg), "v2"
	}
	// As upstream, the raft connection timeouts are never below their defaults.
	if cfg.RaftReadTimeout < transport.DefaultConnReadTimeout {
		cfg.RaftReadTimeout = transport.DefaultConnReadTimeout
		lg.Info(fmt.Sprintf("raft-read-timeout increased to minimum value: %v", transport.DefaultConnReadTimeout))
	}
	if cfg.RaftWriteTimeout < transport.DefaultConnWriteTimeout {
		cfg.RaftWriteTimeout = transport.DefaultConnWriteTimeout
		lg.Info(fmt.Sprintf("raft-write-timeout increased to minimum value: %v", transport.DefaultConnWriteTimeout))
	}
	var localAddr string
	if cfg.Features.Enabled(features.SetMemberLocalAddr) {
		lg.Info("searching for a suitable member local address in AdvertisePeerURLs", "advertise-peer-urls", cfg.AdvertisePeerUrls)
		if localAddr = memberLocalAddr(cfg.AdvertisePeerUrls); localAddr != "" {
			lg.Info("setting member local address", "LocalAddr", localAddr)
		} else {
			lg.Warn("unable to set a member local address due to lack of suitable local addresses", "advertise-peer-urls", cfg.AdvertisePeerUrls)
		}
	}
	quota := cfg.QuotaBackendBytes
	if quota > etcdserver.MaxQuotaBackendBytes {
		lg.Warn("quota exceeds the maximum value", "quota-size-bytes", quota, "quota-maximum-size-bytes", int64(etcdserver.MaxQuotaBackendBytes))
	}
	// Upstream's start-up event, with the version this level reports and, as an extra field,
	// this implementation's own release and commit.
	lg.Info("starting an etcd server", startupFields(cfg, localAddr)...)
	srv, err := etcdserver.New(etcdserver.Config{
		Name: cfg.Name, DataDir: cfg.Dir, WalDir: cfg.WalDir, PeerURLs: cfg.AdvertisePeerUrls, ClientURLs: cfg.AdvertiseClientUrls,
		InitialCluster: ic, InitialClusterToken: token, NewCluster: cfg.InitialClusterState == "new", Discover: discover, DiscoveryProtocol: protocol,
		SnapshotCount: cfg.SnapshotCount, SnapshotCatchUpEntries: cfg.SnapshotCatchUpEntries, MaxSnapshots: cfg.MaxSnapshots,
		MaxWals: cfg.MaxWals, MaxLearners: cfg.MaxLearners, BootstrapDefragThresholdMegabytes: cfg.BootstrapDefragThresholdMegabytes,
		TickMs: cfg.TickMs, ElectionTicks: int(cfg.ElectionMs / cfg.TickMs),
		PreVote: cfg.PreVote, InitialElectionTickAdvance: cfg.InitialElectionTickAdvance,
		QuotaBackendBytes: quota, MaxRequestBytes: cfg.MaxRequestBytes, MaxTxnOps: cfg.MaxTxnOps,
		BackendBatchInterval: cfg.BackendBatchInterval, BackendBatchLimit: cfg.BackendBatchLimit,
		BackendFreelistType: cfg.BackendFreelistType, UnsafeNoFsync: cfg.UnsafeNoFsync,
		StrictReconfigCheck: cfg.StrictReconfigCheck,
		AutoCompactionMode:  cfg.AutoCompactionMode, AutoCompactionRetention: cfg.AutoCompactionRetention,
		CompactionBatchLimit: cfg.CompactionBatchLimit, CompactionSleepInterval: cfg.CompactionSleepInterval,
		DowngradeCheckTime: cfg.DowngradeCheckTime, WarningApplyDuration: cfg.WarningApplyDuration,
		CorruptCheckTime: cfg.CorruptCheckTime, CompactHashCheckTime: cfg.CompactHashCheckTime, Features: &cfg.Features, ForceNewCluster: cfg.ForceNewCluster,
		AuthToken: cfg.AuthToken, AuthTokenTTL: time.Duration(cfg.AuthTokenTTL) * time.Second, BcryptCost: int(cfg.BcryptCost),
		ClientCertAuth: cfg.ClientTLSInfo.ClientCertAuth, V2Deprecation: cfg.V2Deprecation,
		Logger: lg, PeerTLS: peerClientTLS, PeerLocalAddr: localAddr, PeerReadTimeout: cfg.RaftReadTimeout, PeerWriteTimeout: cfg.RaftWriteTimeout, LeaseCheckpointInterval: cfg.LeaseCheckpointInterval,
	})
	if err != nil {
		return nil, err
	}
	e.Server = srv
	if cfg.Tracing.Enabled {
		if e.tracer, err = tracing.Start(context.Background(), cfg.Tracing); err != nil {
			srv.Stop()
			return nil, err
		}
		lg.Info("distributed tracing enabled", "address", cfg.Tracing.Address, "service-name", cfg.Tracing.ServiceName,
			"service-instance-id", cfg.Tracing.InstanceID, "sampling-rate", cfg.Tracing.SamplingRatePerMillion)
	}
	if srv.Restarted() && cfg.Features.Enabled(features.InitialCorruptCheck) {
		if err := srv.InitialCorruptCheck(context.Background()); err != nil {
			lg.Error("checkInitialHashKV failed", "error", err.Error())
			srv.Stop()
			return nil, err
		}
	}
	srv.Start()
	if err := e.serve(); err != nil {
		srv.Stop()
		return nil, err
	}
	lg.Info("serving client traffic", "client-urls", cfg.ListenClientUrls, "peer-urls", cfg.ListenPeerUrls,
		"member-id", fmt.Sprintf("%x", srv.ID()), "data-dir", cfg.Dir)
	return e, nil
}

func (e *Etcd) listenAll(urls []string) ([]net.Listener, error) {
	var ls []net.Listener
	// An address both an http and an https URL name is listened on once: a connection whose
	// first byte starts a TLS handshake goes to the https side, any other to the http side.
	schemes := map[string]map[bool]bool{}
	for _, s := range urls {
		if u, err := membership.ParseURL(s); err == nil && !membership.IsUnix(u) {
			if schemes[u.Host] == nil {
				schemes[u.Host] = map[bool]bool{}
			}
			schemes[u.Host][membership.IsSecure(u)] = true
		}
	}
	split := map[string]map[bool]net.Listener{}
	for _, s := range urls {
		u, err := membership.ParseURL(s)
		if err != nil {
			return ls, err
		}
		secure := membership.IsSecure(u)
		if sides := schemes[u.Host]; len(sides) == 2 {
			if split[u.Host] == nil {
				root, err := e.listen(u)
				if err != nil {
					return ls, err
				}
				e.shared = append(e.shared, root)
				m := cmux.New(root)
				split[u.Host] = map[bool]net.Listener{true: m.Match(cmux.TLS()), false: m.Match(cmux.Any())}
				go func() { _ = m.Serve() }() // ends when the socket closes (closeListeners)
			}
			l := split[u.Host][secure]
			e.secure[l] = secure
			ls = append(ls, l)
			continue
		}
		l, err := e.listen(u)
		if err != nil {
			return ls, err
		}
		e.secure[l] = secure
		ls = append(ls, l)
	}
	return ls, nil
}

// grpcOrHTTP routes gRPC calls to the gRPC server and everything else to the HTTP handler: how
// a TLS listener serves both, since the protocol can only be told apart after decryption.
func grpcOrHTTP(gs *grpc.Server, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			gs.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (e *Etcd) serve() error {
	s := e.Server
	reg := s.Config().Registry
	rpcMetrics := v3rpc.NewCallMetrics(e.cfg.Metrics == "extensive")
	reg.MustRegister(rpcMetrics)
	traffic := v3rpc.NewTrafficCounter(reg)
	var watchLoop *v3rpc.WatchLoopMetrics
	if version.Metrics37.Built(version.Local()) {
		watchLoop = v3rpc.NewWatchLoopMetrics(reg)
	}
	for _, l := range e.clients {
		opts := e.cfg.grpcOptions()
		if e.tracer != nil {
			opts = append(opts, grpc.StatsHandler(e.tracer.StatsHandler()))
		}
		creds := insecure.NewCredentials()
		if e.secure[l] {
			// The loopback connection to this same listener (the gateway's and the recipes'): it
			// presents our own certificate (for --client-cert-auth) and need not verify the host.
			ctls, err := e.cfg.ClientTLSInfo.ClientConfig()
			if err != nil {
				return err
			}
			ctls.InsecureSkipVerify = true
			creds = credentials.NewTLS(ctls)
		}
		target := "passthrough:///" + l.Addr().String()
		if l.Addr().Network() == "unix" {
			target = "unix:" + l.Addr().String()
		}
		conn, err := grpc.NewClient(target,
			grpc.WithTransportCredentials(creds),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<31-1)))
		if err != nil {
			return fmt.Errorf("gateway connection: %w", err)
		}
		e.selfConns = append(e.selfConns, conn)
		// Upstream's lock and election services, run on that connection (it is dialled lazily,
		// once the listener serves).
		rec := recipes.New(conn, v3rpc.GatewayMark)
		e.recipes = append(e.recipes, rec)
		gs := v3rpc.NewServer(s, v3rpc.Options{WatchProgressNotifyInterval: e.cfg.WatchProgressNotifyInterval,
			Metrics: rpcMetrics, Traffic: traffic, WatchLoop: watchLoop, ExtraServerOptions: opts,
			StopGRPCServiceOnDefrag:     e.cfg.Features.Enabled(features.StopGRPCServiceOnDefrag),
			WarningUnaryRequestDuration: e.cfg.WarningUnaryRequestDuration, Register: rec.Register})
		h, err := httpapi.Handler(s, conn, e.httpOptions())
		if err != nil {
			return err
		}
		h = e.cfg.wrapHTTP(h, e.log)
		traffic := "grpc+http"
		if len(e.httpClients) > 0 {
			h, traffic = http.NotFoundHandler(), "grpc" // HTTP has listeners of its own
		}
		if e.secure[l] {
			tcfg, err := clientSide(e.cfg.ClientTLSInfo).ServerConfig("h2", "http/1.1")
			if err != nil {
				return err
			}
			hs := &http.Server{Handler: grpcOrHTTP(gs, h), TLSConfig: tcfg, ReadHeaderTimeout: 10 * time.Second,
				ErrorLog: handshakeLog(e.log, "client"),
				// gRPC here goes through net/http's HTTP/2 server, whose own stream limit is
				// what --max-concurrent-streams must set (net/http takes at most MaxInt32).
				HTTP2: &http.HTTP2Config{MaxConcurrentStreams: int(min(e.cfg.MaxConcurrentStreams, math.MaxInt32))}}
			e.grpcServers = append(e.grpcServers, gs)
			e.httpServers = append(e.httpServers, hs)
			e.whenReady(func() {
				e.log.Info("ready to serve client requests") // upstream's event, one per client listener
				e.log.Info("serving client traffic securely", "traffic", traffic, "address", l.Addr().String())
				e.report(hs.ServeTLS(l, "", ""))
			})
			continue
		}
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		m := cmux.New(l)
		// As upstream: every HTTP/2 connection is gRPC's, whatever content type its first
		// request names (a client may send application/grpc+proto), the rest is HTTP's.
		grpcL := m.Match(cmux.HTTP2())
		httpL := m.Match(cmux.Any())
		e.grpcServers = append(e.grpcServers, gs)
		e.httpServers = append(e.httpServers, hs)
		e.whenReady(func() {
			e.log.Info("ready to serve client requests")
			e.log.Info("serving client traffic insecurely; this is strongly discouraged!", "traffic", traffic, "address", l.Addr().String())
			go func() { e.report(gs.Serve(grpcL)) }()
			go func() { e.report(hs.Serve(httpL)) }()
			e.report(m.Serve())
		})
	}
	if err := e.serveClientHTTP(); err != nil {
		return err
	}
	peerHandler := httpapi.PeerHandler(s, s.PeerHandler())
	for _, l := range e.peers {
		if err := e.serveHTTP(l, peerHandler, e.cfg.PeerTLSInfo, &e.peerServers, "peer", "http/1.1"); err != nil {
			return err
		}
		e.log.Info("serving peer traffic", "address", l.Addr().String())
	}
	for _, l := range e.metrics {
		mux := http.NewServeMux()
		httpapi.AddMetrics(mux, s)
		if err := e.serveHTTP(l, mux, e.cfg.ClientTLSInfo, &e.httpServers, "client", "h2", "http/1.1"); err != nil {
			return err
		}
	}
	return nil
}

// serveClientHTTP serves the gateway, /health, /metrics and the rest of the client HTTP API
// on --listen-client-http-urls, through the first client listener's gRPC connection.
func (e *Etcd) serveClientHTTP() error {
	if len(e.httpClients) == 0 {
		return nil
	}
	if len(e.selfConns) == 0 {
		return errors.New("--listen-client-http-urls needs a --listen-client-urls listener for the gateway to call")
	}
	h, err := httpapi.Handler(e.Server, e.selfConns[0], e.httpOptions())
	if err != nil {
		return err
	}
	h = e.cfg.wrapHTTP(h, e.log)
	for _, l := range e.httpClients {
		l := l
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: handshakeLog(e.log, "client")}
		e.httpServers = append(e.httpServers, hs)
		secure := e.secure[l]
		var tcfg *tls.Config
		if secure {
			if tcfg, err = clientSide(e.cfg.ClientTLSInfo).ServerConfig("h2", "http/1.1"); err != nil {
				return err
			}
			hs.TLSConfig = tcfg
		}
		e.whenReady(func() {
			if secure {
				e.log.Info("serving client traffic securely", "traffic", "http", "address", l.Addr().String())
				e.report(hs.ServeTLS(l, "", ""))
				return
			}
			e.log.Info("serving client traffic insecurely; this is strongly discouraged!", "traffic", "http", "address", l.Addr().String())
			e.report(hs.Serve(l))
		})
	}
	return nil
}

// whenReady runs serve in the background once the member has published itself: client
// connections wait in the backlog until then, as upstream.
func (e *Etcd) whenReady(serve func()) {
	go func() {
		select {
		case <-e.Server.ReadyNotify():
		case <-e.Server.Stopping():
			return
		}
		serve()
	}()
}

// serveHTTP serves h on l, over TLS when the listener's URL is https.
func (e *Etcd) serveHTTP(l net.Listener, h http.Handler, info tlsutil.Info, into *[]*http.Server, endpoint string, protos ...string) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: handshakeLog(e.log, endpoint)}
	*into = append(*into, hs)
	if !e.secure[l] {
		go func() { e.report(hs.Serve(l)) }()
		return nil
	}
	if endpoint != "peer" {
		info = clientSide(info)
	}
	tcfg, err := info.ServerConfig(protos...)
	if err != nil {
		return err
	}
	hs.TLSConfig = tcfg
	go func() { e.report(hs.ServeTLS(l, "", "")) }()
	return nil
}

func (e *Etcd) report(err error) {
	if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, cmux.ErrListenerClosed) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, grpc.ErrServerStopped) || strings.Contains(err.Error(), "use of closed network connection") {
		return
	}
	select {
	case e.errc <- err:
	default:
	}
}

// Err reports serving errors.
func (e *Etcd) Err() <-chan error { return e.errc }

// ClientAddrs are the bound client listener addresses (useful with port 0).
func (e *Etcd) ClientAddrs() []string {
	var out []string
	for _, l := range e.clients {
		out = append(out, l.Addr().String())
	}
	return out
}

// ErrMissingClientTLSInfoForMetricsURL refuses an https --listen-metrics-urls without
// --cert-file and --key-file, in upstream's words.
var ErrMissingClientTLSInfoForMetricsURL = errors.New("client TLS key/cert (--cert-file, --key-file) must be provided for metrics secure url")

// Close stops taking requests, lets in-flight ones finish (bounded), then stops the member.
func (e *Etcd) Close() {
	e.closeOnce.Do(func() {
		e.log.Info("closing etcd server", "name", e.cfg.Name)
		// As upstream: in-flight requests get a request timeout (5 s plus two elections) to finish.
		grace := 5*time.Second + 2*time.Duration(e.cfg.ElectionMs)*time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if e.Server != nil {
			// A leader hands over first, so the cluster has a leader while this member drains.
			e.Server.TransferLeadershipAway(ctx)
			e.Server.BeginDrain()
		}
		var wg sync.WaitGroup
		for _, gs := range e.grpcServers {
			wg.Add(1)
			go func(gs *grpc.Server) {
				defer wg.Done()
				done := make(chan struct{})
				go func() { gs.GracefulStop(); close(done) }()
				select {
				case <-done:
				case <-ctx.Done():
					gs.Stop() // long-lived streams (watch, keepalive) are cut here
				}
			}(gs)
		}
		for _, hs := range e.httpServers {
			wg.Add(1)
			go func(hs *http.Server) { defer wg.Done(); hs.Shutdown(ctx) }(hs)
		}
		wg.Wait()
		for _, r := range e.recipes {
			r.Close()
		}
		for _, c := range e.selfConns {
			c.Close()
		}
		e.closeListeners()
		if e.Server != nil {
			e.Server.Stop()
		}
		for _, hs := range e.peerServers {
			hs.Close()
		}
		if e.tracer != nil {
			if err := e.tracer.Close(ctx); err != nil {
				e.log.Warn("failed to flush trace spans", "error", err.Error())
			}
		}
		e.log.Info("closed etcd server", "name", e.cfg.Name)
	})
}

func (e *Etcd) closeListeners() {
	for _, group := range [][]net.Listener{e.clients, e.httpClients, e.peers, e.metrics, e.shared} {
		for _, l := range group {
			l.Close()
		}
	}
}

// clientSide is info as client listeners use it: upstream checks a client certificate's IP and
// DNS names against the connecting address on peer connections only (a client may connect from
// anywhere, or over a unix socket, which has no address to check).
func clientSide(info tlsutil.Info) tlsutil.Info {
	info.SkipClientSANVerify = true
	return info
}
