package etcdmain

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"etcdx/server/embed"
	"etcdx/server/features"
	"etcdx/server/membership"
	"etcdx/server/version"
)

// flagValues is the parsed command line: the member's configuration and what surrounds it.
type flagValues struct {
	fs *flag.FlagSet
	// help is what --help lists: fs, and at 3.7 the v2 discovery flags upstream 3.7 still lists
	// but no longer defines.
	help              *flag.FlagSet
	showVersion       bool
	configFile        string
	cfg               *embed.Config
	discoveryFallback string
	clusterState      string
	v2Deprecation     string
	// experimental holds the deprecated --experimental-* booleans that stand for feature gates.
	experimental map[string]*bool
	// renamed pairs each deprecated spelling with the flag that replaced it (both bound to the
	// same field, so either works; both together are refused, as upstream).
	renamed map[string]string
	// ours are flags upstream does not have (documented in docs/compatibility.md).
	ours map[string]bool
	// Upstream 3.5's v2 API and v2 proxy flags, at level 3.5 (checkV2Flags).
	enableV2    bool
	v2v3, proxy string
}

// listValue is a comma-separated list flag ("a,b,c"); setting it replaces the default.
type listValue struct{ dst *[]string }

func (l listValue) String() string {
	if l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, ",")
}

func (l listValue) Set(s string) error {
	*l.dst = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.dst = append(*l.dst, p)
		}
	}
	return nil
}

// urlsValue is a comma-separated list of URLs, checked as the flag is parsed (as upstream, a
// malformed URL is a command-line error).
type urlsValue struct{ listValue }

func (u urlsValue) Set(s string) error {
	if err := u.listValue.Set(s); err != nil {
		return err
	}
	for _, raw := range *u.dst {
		if _, err := membership.ParseURL(raw); err != nil {
			return err
		}
	}
	return nil
}

// uint32Value is --max-concurrent-streams (upstream prints its default as math.MaxUint32).
type uint32Value struct{ dst *uint32 }

func (u uint32Value) String() string {
	if u.dst == nil || *u.dst == math.MaxUint32 {
		return "math.MaxUint32"
	}
	return strconv.FormatUint(uint64(*u.dst), 10)
}

func (u uint32Value) Set(s string) error {
	v, err := strconv.ParseUint(s, 0, 32)
	if err != nil {
		return err
	}
	*u.dst = uint32(v)
	return nil
}

// choiceValue accepts one of a fixed set of words.
type choiceValue struct {
	dst   *string
	valid []string
}

func (c choiceValue) String() string {
	if c.dst == nil {
		return ""
	}
	return *c.dst
}

// v2StageValue is --v2-deprecation, refused in upstream's words: invalid value "not-yet".
type v2StageValue struct{ choiceValue }

func (v v2StageValue) Set(s string) error {
	if err := v.choiceValue.Set(s); err != nil {
		return fmt.Errorf("invalid value %q", s)
	}
	return nil
}

func (c choiceValue) Set(s string) error {
	for _, v := range c.valid {
		if s == v {
			*c.dst = s
			return nil
		}
	}
	return fmt.Errorf("invalid value")
}

func newFlagSet(out io.Writer) *flagValues {
	fv := &flagValues{cfg: embed.NewConfig(), experimental: map[string]*bool{}, renamed: map[string]string{},
		ours: map[string]bool{}}
	c := fv.cfg
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	fs.SetOutput(out)
	fv.fs = fs
	fv.clusterState = c.InitialClusterState
	fv.v2Deprecation = "write-only" // upstream 3.6's default, which it enforces
	fv.discoveryFallback = "exit"

	// Member.
	fs.StringVar(&c.Name, "name", c.Name, "Human-readable name for this member.")
	fs.StringVar(&c.Dir, "data-dir", "", "Path to the data directory.")
	fs.StringVar(&c.WalDir, "wal-dir", "", "Path to a dedicated WAL directory (default: member/wal inside the data dir).")
	fs.IntVar(&c.MaxSnapshots, "max-snapshots", c.MaxSnapshots, "Maximum number of snapshot files to retain (0 is unlimited). Deprecated in v3.6.")
	fs.IntVar(&c.MaxWals, "max-wals", c.MaxWals, "Maximum number of WAL files to retain (0 is unlimited).")
	fs.Uint64Var(&c.SnapshotCount, "snapshot-count", c.SnapshotCount, "Number of committed transactions to trigger a snapshot to disk.")
	fs.Uint64Var(&c.SnapshotCatchUpEntries, "snapshot-catchup-entries", c.SnapshotCatchUpEntries, "Number of raft entries kept after a snapshot for slow followers to catch up.")
	fs.UintVar(&c.TickMs, "heartbeat-interval", c.TickMs, "Time (in milliseconds) of a heartbeat interval.")
	fs.UintVar(&c.ElectionMs, "election-timeout", c.ElectionMs, "Time (in milliseconds) for an election to timeout.")
	fs.BoolVar(&c.InitialElectionTickAdvance, "initial-election-tick-advance", c.InitialElectionTickAdvance, "Whether to fast-forward initial election ticks on boot for faster election.")
	fs.Int64Var(&c.QuotaBackendBytes, "quota-backend-bytes", c.QuotaBackendBytes, "Raise alarms when backend size exceeds the given quota (0 means the default, 2 GiB).")
	fs.Var(choiceValue{&c.BackendFreelistType, []string{"map", "array"}}, "backend-bbolt-freelist-type", "The freelist type of the bbolt backend: map or array.")
	fs.DurationVar(&c.BackendBatchInterval, "backend-batch-interval", c.BackendBatchInterval, "The longest time before the backend commits its transaction (0: the default).")
	fs.IntVar(&c.BackendBatchLimit, "backend-batch-limit", c.BackendBatchLimit, "The most operations before the backend commits its transaction (0: the default).")
	fs.UintVar(&c.MaxTxnOps, "max-txn-ops", c.MaxTxnOps, "Maximum number of operations permitted in a transaction.")
	fs.UintVar(&c.MaxRequestBytes, "max-request-bytes", c.MaxRequestBytes, "Maximum client request size in bytes the server will accept.")
	fs.Var(uint32Value{&c.MaxConcurrentStreams}, "max-concurrent-streams", "Maximum concurrent streams that each client connection can open.")
	fs.DurationVar(&c.GRPCKeepAliveMinTime, "grpc-keepalive-min-time", c.GRPCKeepAliveMinTime, "Shortest interval at which a client may ping the server.")
	fs.DurationVar(&c.GRPCKeepAliveInterval, "grpc-keepalive-interval", c.GRPCKeepAliveInterval, "How often the server pings an idle client connection (0 disables).")
	fs.DurationVar(&c.GRPCKeepAliveTimeout, "grpc-keepalive-timeout", c.GRPCKeepAliveTimeout, "How long the server waits for a ping's answer before closing the connection (0 disables).")
	fs.BoolVar(&c.SocketReusePort, "socket-reuse-port", false, "Set SO_REUSEPORT on listeners.")
	fs.BoolVar(&c.SocketReuseAddress, "socket-reuse-address", false, "Set SO_REUSEADDR on listeners.")
	fs.BoolVar(&c.EnableGRPCGateway, "enable-grpc-gateway", c.EnableGRPCGateway, "Serve the /v3 JSON gateway on client URLs.")
	fs.DurationVar(&c.RaftReadTimeout, "raft-read-timeout", c.RaftReadTimeout, "Read timeout on each peer connection.")
	fs.DurationVar(&c.RaftWriteTimeout, "raft-write-timeout", c.RaftWriteTimeout, "Write timeout on each peer connection.")
	fs.Var(&c.Features, "feature-gates", "Comma-separated Name=true|false server feature gates: "+strings.Join(features.Names(version.Local()), ", ")+".")

	// URLs.
	fs.Var(urlsValue{listValue{&c.ListenPeerUrls}}, "listen-peer-urls", "List of URLs to listen on for peer traffic.")
	fs.Var(urlsValue{listValue{&c.ListenClientUrls}}, "listen-client-urls", "List of URLs to listen on for client gRPC traffic (and HTTP unless --listen-client-http-urls is given).")
	fs.Var(urlsValue{listValue{&c.ListenClientHTTPUrls}}, "listen-client-http-urls", "List of URLs to listen on for HTTP-only client traffic.")
	fs.Var(urlsValue{listValue{&c.ListenMetricsUrls}}, "listen-metrics-urls", "List of URLs to listen on for the /metrics and /health endpoints.")
	fs.Var(urlsValue{listValue{&c.AdvertisePeerUrls}}, "initial-advertise-peer-urls", "List of this member's peer URLs to advertise to the rest of the cluster.")
	fs.Var(urlsValue{listValue{&c.AdvertiseClientUrls}}, "advertise-client-urls", "List of this member's client URLs to advertise to the public.")
	fs.Var(listValue{&c.CORS}, "cors", "Comma-separated origins allowed for CORS, or '*'.")
	fs.Var(listValue{&c.HostWhitelist}, "host-whitelist", "Comma-separated acceptable Host headers of client HTTP requests, or '*'.")

	// Clustering.
	fs.StringVar(&c.InitialCluster, "initial-cluster", "", "Initial cluster configuration for bootstrapping (default: name=initial-advertise-peer-urls).")
	fs.Var(choiceValue{&fv.clusterState, []string{"new", "existing"}}, "initial-cluster-state", "Initial cluster state ('new' or 'existing').")
	fs.StringVar(&c.InitialClusterToken, "initial-cluster-token", c.InitialClusterToken, "Initial cluster token for the etcd cluster during bootstrap.")
	fs.BoolVar(&c.StrictReconfigCheck, "strict-reconfig-check", c.StrictReconfigCheck, "Reject reconfiguration requests that would cause quorum loss.")
	fs.BoolVar(&c.PreVote, "pre-vote", c.PreVote, "Run raft's pre-vote phase before an election.")
	fs.IntVar(&c.MaxLearners, "max-learners", c.MaxLearners, "The maximum number of learners in the cluster membership.")
	fs.BoolVar(&c.ForceNewCluster, "force-new-cluster", false, "Restart this member as a one-member cluster from its data, keeping its keys.")
	fs.Var(choiceValue{&fv.discoveryFallback, []string{"exit", "proxy"}}, "discovery-fallback", "Expected behaviour ('exit') when discovery fails.")
	addDiscoveryFlags(fs, fv)

	// Security.
	ct, pt := &c.ClientTLSInfo, &c.PeerTLSInfo
	fs.StringVar(&ct.CertFile, "cert-file", "", "Path to the client server TLS cert file.")
	fs.StringVar(&ct.KeyFile, "key-file", "", "Path to the client server TLS key file.")
	fs.StringVar(&ct.ClientCertFile, "client-cert-file", "", "Path to the certificate this member presents as a client (default: --cert-file).")
	fs.StringVar(&ct.ClientKeyFile, "client-key-file", "", "Path to the key this member uses as a client (default: --key-file).")
	fs.BoolVar(&ct.ClientCertAuth, "client-cert-auth", false, "Enable client cert authentication.")
	fs.StringVar(&ct.CRLFile, "client-crl-file", "", "Path to the client certificate revocation list file.")
	fs.Var(listValue{&ct.AllowedHostnames}, "client-cert-allowed-hostname", "Allowed TLS name for client cert authentication.")
	fs.StringVar(&ct.TrustedCAFile, "trusted-ca-file", "", "Path to the client server TLS trusted CA cert file.")
	fs.BoolVar(&ct.AutoTLS, "auto-tls", false, "Client TLS using generated certificates.")
	fs.StringVar(&pt.CertFile, "peer-cert-file", "", "Path to the peer server TLS cert file.")
	fs.StringVar(&pt.KeyFile, "peer-key-file", "", "Path to the peer server TLS key file.")
	fs.StringVar(&pt.ClientCertFile, "peer-client-cert-file", "", "Path to the certificate this member presents to peers (default: --peer-cert-file).")
	fs.StringVar(&pt.ClientKeyFile, "peer-client-key-file", "", "Path to the key this member uses towards peers (default: --peer-key-file).")
	fs.BoolVar(&pt.ClientCertAuth, "peer-client-cert-auth", false, "Enable peer client cert authentication.")
	fs.StringVar(&pt.TrustedCAFile, "peer-trusted-ca-file", "", "Path to the peer server TLS trusted CA file.")
	fs.BoolVar(&pt.AutoTLS, "peer-auto-tls", false, "Peer TLS using generated certificates.")
	fs.UintVar(&c.SelfSignedCertValidity, "self-signed-cert-validity", c.SelfSignedCertValidity, "Validity in years of the certificates --auto-tls and --peer-auto-tls generate.")
	fs.StringVar(&pt.CRLFile, "peer-crl-file", "", "Path to the peer certificate revocation list file.")
	fs.Var(listValue{&pt.AllowedCNs}, "peer-cert-allowed-cn", "Allowed CN for inter-peer authentication.")
	fs.Var(listValue{&pt.AllowedHostnames}, "peer-cert-allowed-hostname", "Allowed TLS hostname for inter-peer authentication.")
	fs.Var(listValue{&c.CipherSuites}, "cipher-suites", "Comma-separated list of supported TLS cipher suites between client/server and peers (empty: Go's).")
	fs.BoolVar(&pt.SkipClientSANVerify, "peer-skip-client-san-verification", false, "Skip verification of SAN field in client certificate for peer connections.")
	fs.StringVar(&c.TLSMinVersion, "tls-min-version", c.TLSMinVersion, "Minimum TLS version supported by etcd: TLS1.2 or TLS1.3.")
	fs.StringVar(&c.TLSMaxVersion, "tls-max-version", "", "Maximum TLS version supported by etcd: TLS1.2 or TLS1.3 (empty: Go's).")

	// Logging.
	fs.StringVar(&c.Log.Logger, "logger", c.Log.Logger, "Currently only supports 'zap' for structured logging.")
	fs.Var(listValue{&c.Log.Outputs}, "log-outputs", "Where to write logs: 'default' (stderr), 'stderr', 'stdout', 'systemd/journal' or file paths, comma-separated.")
	fs.StringVar(&c.Log.Level, "log-level", c.Log.Level, "Configures log level. Only supports debug, info, warn, error, panic, or fatal.")
	fs.StringVar(&c.Log.Format, "log-format", c.Log.Format, "Configures log format: json or console.")
	fs.BoolVar(&c.Log.Rotate, "enable-log-rotation", false, "Rotate the (single) log file given in --log-outputs.")
	fs.StringVar(&c.Log.RotationConfig, "log-rotation-config-json", c.Log.RotationConfig, "Log rotation settings as JSON: maxsize (MB), maxage (days), maxbackups, localtime, compress.")

	// Compaction, profiling, metrics, auth.
	fs.StringVar(&c.AutoCompactionRetention, "auto-compaction-retention", "0", "Auto compaction retention for mvcc key value store. 0 means disable auto compaction.")
	fs.StringVar(&c.AutoCompactionMode, "auto-compaction-mode", c.AutoCompactionMode, "Interpret 'auto-compaction-retention' one of: periodic|revision.")
	fs.BoolVar(&c.EnablePprof, "enable-pprof", false, "Serve runtime profiling data via HTTP at /debug/pprof/ on client URLs.")
	fs.Var(choiceValue{&c.Metrics, []string{"basic", "extensive"}}, "metrics", "Set level of detail for exported metrics: basic or extensive (adds gRPC handling-time histograms).")
	fs.StringVar(&c.AuthToken, "auth-token", c.AuthToken, "Authentication token type: 'simple' or 'jwt,pub-key=...,priv-key=...,sign-method=...,ttl=...'.")
	fs.UintVar(&c.BcryptCost, "bcrypt-cost", c.BcryptCost, "Bcrypt cost for hashing authentication passwords (4 to 31).")
	fs.UintVar(&c.AuthTokenTTL, "auth-token-ttl", c.AuthTokenTTL, "Seconds a simple token lives.")

	// Tracing.
	fs.BoolVar(&c.Tracing.Enabled, "enable-distributed-tracing", false, "Export OpenTelemetry spans of requests over OTLP/gRPC.")
	fs.StringVar(&c.Tracing.Address, "distributed-tracing-address", c.Tracing.Address, "Address of the OTLP/gRPC collector.")
	fs.StringVar(&c.Tracing.ServiceName, "distributed-tracing-service-name", c.Tracing.ServiceName, "The service name spans carry.")
	fs.StringVar(&c.Tracing.InstanceID, "distributed-tracing-instance-id", "", "The service instance ID spans carry (unique per member).")
	fs.IntVar(&c.Tracing.SamplingRatePerMillion, "distributed-tracing-sampling-rate", 0, "Spans sampled per million requests.")

	// Checks, timings and the rest of upstream's 3.6 settings.
	fs.DurationVar(&c.CorruptCheckTime, "corrupt-check-time", 0, "How often to check data corruption between members (0 disables).")
	fs.DurationVar(&c.CompactHashCheckTime, "compact-hash-check-time", c.CompactHashCheckTime, "How often the leader checks the hashes of compacted revisions across members.")
	fs.IntVar(&c.CompactionBatchLimit, "compaction-batch-limit", c.CompactionBatchLimit, "How many revisions a compaction deletes in one batch.")
	fs.DurationVar(&c.CompactionSleepInterval, "compaction-sleep-interval", c.CompactionSleepInterval, "The pause between compaction batches.")
	fs.DurationVar(&c.WatchProgressNotifyInterval, "watch-progress-notify-interval", c.WatchProgressNotifyInterval, "Duration of periodic watch progress notifications.")
	fs.DurationVar(&c.DowngradeCheckTime, "downgrade-check-time", c.DowngradeCheckTime, "How often the leader checks whether a downgrade has finished.")
	fs.DurationVar(&c.WarningApplyDuration, "warning-apply-duration", c.WarningApplyDuration, "Log a warning when applying a request takes longer than this.")
	fs.DurationVar(&c.WarningUnaryRequestDuration, "warning-unary-request-duration", c.WarningUnaryRequestDuration, "Log a warning when a unary request takes longer than this.")
	fs.BoolVar(&c.MemoryMlock, "memory-mlock", false, "Lock the process's memory (in particular bbolt's pages) in RAM.")
	fs.UintVar(&c.BootstrapDefragThresholdMegabytes, "bootstrap-defrag-threshold-megabytes", c.BootstrapDefragThresholdMegabytes, "Defragment at start when that will free at least this many megabytes (0 disables).")
	fs.BoolVar(&c.UnsafeNoFsync, "unsafe-no-fsync", false, "Disables fsync, unsafe, will cause data loss.")
	v2Stages := []string{"write-only", "write-only-drop-data", "gone"}
	if version.Local().Less(version.V3_6) {
		v2Stages = append([]string{"not-yet"}, v2Stages...) // 3.6 refuses not-yet as an invalid value
	}
	fs.Var(v2StageValue{choiceValue{&fv.v2Deprecation, v2Stages}}, "v2-deprecation", "The v2store deprecation stage (deprecated; the default is enforced).")
	fs.DurationVar(&c.LeaseCheckpointInterval, "lease-checkpoint-interval", c.LeaseCheckpointInterval, "Interval at which the leader checkpoints remaining lease TTLs (ours: upstream has no flag for it).")
	fv.ours["lease-checkpoint-interval"] = true

	level := version.Local()
	if !version.NoExperimentalFlags.Built(level) {
		addExperimentalFlags(fv)
	}
	if !version.FlagNames36.Built(level) {
		addV2Flags(fv)
		fv.v2Deprecation = "not-yet" // upstream 3.5's default
	}

	fs.BoolVar(&fv.showVersion, "version", false, "Print the version and exit.")
	fs.StringVar(&fv.configFile, "config-file", "", "Path to the server configuration file. Other command line flags and environment variables are then ignored.")

	fs.Usage = func() {}
	if !version.FlagNames36.Built(level) {
		fv.fs = without(fs, flagsSince36)
	}
	fv.help = fv.fs
	if !version.FlagNames36.Built(level) {
		// upstream 3.5's --help leaves it out, though it takes it
		fv.help = without(fv.fs, map[string]bool{"experimental-snapshot-catchup-entries": true})
	}
	if version.NoV2DiscoveryFlags.Built(level) {
		fv.fs = without(fv.help, flagsGone37)
	}
	return fv
}

// flagsSince36 are the flags upstream 3.6 added (its new names for 3.5's --experimental-* ones,
// the v3 discovery client, the feature gates and the rest); a 3.5 member has none of them, as
// upstream 3.5.35 has none, and takes the experimental spellings instead (of those upstream's
// 3.5 defines, --experimental-snapshot-catchup-entries among them).
var flagsSince36 = map[string]bool{
	"bootstrap-defrag-threshold-megabytes": true, "compact-hash-check-time": true, "compaction-batch-limit": true,
	"compaction-sleep-interval": true, "corrupt-check-time": true, "downgrade-check-time": true, "feature-gates": true,
	"log-format": true, "max-learners": true, "memory-mlock": true, "peer-skip-client-san-verification": true,
	"snapshot-catchup-entries": true, "warning-apply-duration": true,
	"warning-unary-request-duration": true, "experimental-warning-unary-request-duration": true,
	"watch-progress-notify-interval": true, "enable-distributed-tracing": true, "distributed-tracing-address": true,
	"distributed-tracing-service-name": true, "distributed-tracing-instance-id": true, "distributed-tracing-sampling-rate": true,
	"discovery-endpoints": true, "discovery-token": true, "discovery-dial-timeout": true, "discovery-request-timeout": true,
	"discovery-keepalive-time": true, "discovery-keepalive-timeout": true, "discovery-insecure-transport": true,
	"discovery-insecure-skip-tls-verify": true, "discovery-cert": true, "discovery-key": true, "discovery-cacert": true,
	"discovery-user": true, "discovery-password": true,
}

// flagsGone37 are the v2 discovery flags upstream 3.7 no longer defines, though its --help still
// lists them.
var flagsGone37 = map[string]bool{"discovery": true, "discovery-proxy": true}

// without is fs less the flags named in drop, bound to the same values.
func without(fs *flag.FlagSet, drop map[string]bool) *flag.FlagSet {
	out := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	out.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if !drop[f.Name] {
			out.Var(f.Value, f.Name, f.Usage)
		}
	})
	out.Usage = fs.Usage
	return out
}

// addV2Flags adds upstream 3.5's flags for its v2 API and v2 proxy. The v2 API is served; the
// v2 proxy and the v2 API emulated over v3 are refused (checkV2Flags).
func addV2Flags(fv *flagValues) {
	fs := fv.fs
	fs.BoolVar(&fv.enableV2, "enable-v2", false, "Accept etcd V2 client requests. Deprecated and to be decommissioned in v3.6.")
	fs.StringVar(&fv.v2v3, "experimental-enable-v2v3", "", "v3 prefix for serving emulated v2 state. Deprecated in 3.5. Will be decommissioned in 3.6.")
	fs.Var(choiceValue{&fv.proxy, []string{"off", "readonly", "on"}}, "proxy", "Proxy mode setting ('off', 'readonly' or 'on').")
	fv.proxy = "off"
	for name, def := range map[string]uint{"proxy-failure-wait": 5000, "proxy-refresh-interval": 30000, "proxy-dial-timeout": 1000,
		"proxy-write-timeout": 5000, "proxy-read-timeout": 0} {
		fs.Uint(name, def, "Time (in milliseconds) for the v2 proxy (used with --proxy only).")
	}
}

// checkV2Flags takes the v2 API's flags (3.5 only): --enable-v2 unless the deprecation stage
// forbids it, in upstream's words; the v2 proxy and the emulated v2 API are refused.
func checkV2Flags(fv *flagValues, out *configured) error {
	out.cfg.V2Deprecation = fv.v2Deprecation
	if version.FlagNames36.Built(version.Local()) {
		out.cfg.V2Deprecation = "write-only" // upstream 3.6 enforces its default whatever is given
	}
	switch {
	case fv.enableV2 && fv.v2Deprecation != "not-yet":
		return fmt.Errorf("--enable-v2 and --v2-deprecation=%s are mutually exclusive", fv.v2Deprecation)
	case fv.enableV2:
		out.cfg.EnableV2 = true
		out.warnings = append(out.warnings, warning{"Flag `enable-v2` is deprecated and will get removed in etcd 3.6.", nil})
	}
	switch {
	case fv.v2v3 != "" && fv.enableV2:
		// Upstream 3.5 then serves the v2 API emulated over the v3 keyspace; without
		// --enable-v2 the flag has no effect there either (only its deprecation warning).
		return fmt.Errorf("--experimental-enable-v2v3 with --enable-v2: this server serves no v2 API emulated over v3 (upstream 3.5 deprecated it, 3.6 removed it); drop --experimental-enable-v2v3 to serve the v2 API from its own store")
	case fv.proxy != "" && fv.proxy != "off":
		return fmt.Errorf("--proxy=%s: this server runs no v2 proxy (upstream 3.5 deprecated it, 3.6 removed it); run a member, or etcd grpc-proxy", fv.proxy)
	}
	return nil
}

// addExperimentalFlags adds the deprecated spellings that upstream 3.6 still takes: the same
// fields under their 3.5 names, and the --experimental-* booleans that stand for feature gates.
func addExperimentalFlags(fv *flagValues) {
	fs, c := fv.fs, fv.cfg
	renamed := func(old, now string) {
		f := fs.Lookup(now)
		fs.Var(f.Value, old, "Deprecated: use --"+now+".")
		fv.renamed[old] = now
	}
	renamed("experimental-snapshot-catchup-entries", "snapshot-catchup-entries")
	renamed("experimental-bootstrap-defrag-threshold-megabytes", "bootstrap-defrag-threshold-megabytes")
	renamed("experimental-watch-progress-notify-interval", "watch-progress-notify-interval")
	renamed("experimental-lease-checkpoint-interval", "lease-checkpoint-interval")
	fv.ours["experimental-lease-checkpoint-interval"] = true
	renamed("experimental-corrupt-check-time", "corrupt-check-time")
	renamed("experimental-compact-hash-check-time", "compact-hash-check-time")
	renamed("experimental-compaction-batch-limit", "compaction-batch-limit")
	renamed("experimental-compaction-sleep-interval", "compaction-sleep-interval")
	renamed("experimental-downgrade-check-time", "downgrade-check-time")
	renamed("experimental-warning-apply-duration", "warning-apply-duration")
	renamed("experimental-warning-unary-request-duration", "warning-unary-request-duration")
	renamed("experimental-memory-mlock", "memory-mlock")
	renamed("experimental-peer-skip-client-san-verification", "peer-skip-client-san-verification")
	renamed("experimental-enable-distributed-tracing", "enable-distributed-tracing")
	renamed("experimental-distributed-tracing-address", "distributed-tracing-address")
	renamed("experimental-distributed-tracing-service-name", "distributed-tracing-service-name")
	renamed("experimental-distributed-tracing-instance-id", "distributed-tracing-instance-id")
	renamed("experimental-distributed-tracing-sampling-rate", "distributed-tracing-sampling-rate")
	for name, f := range features.ExperimentalFlags {
		b := new(bool)
		*b = c.Features.Enabled(f)
		fs.BoolVar(b, name, *b, fmt.Sprintf("Deprecated: use --feature-gates=%s=true|false.", f))
		fv.experimental[name] = b
	}
}
