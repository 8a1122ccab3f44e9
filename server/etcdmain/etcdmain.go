// Package etcdmain is the etcd command: flags (upstream names), ETCD_* environment variables,
// the YAML config file, and the process lifecycle around an embedded member.
package etcdmain

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"etcdx/pkg/buildinfo"
	"etcdx/server/embed"
	"etcdx/server/etcdserver"
	"etcdx/server/tlsutil"
	"etcdx/server/version"
)

// ExitUsage is the exit status for bad flags, environment variables or config files.
const ExitUsage = 2

// usageError marks errors in what the operator gave us (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

type flagValues struct {
	showVersion bool
	configFile  string
	cfg         *embed.Config
	// unsupported holds bootstrap flags of upstream's that this server refuses when set.
	unsupported       map[string]*string
	discoveryFallback string
}

func newFlagSet(out io.Writer) (*pflag.FlagSet, *flagValues) {
	fv := &flagValues{cfg: embed.NewConfig()}
	c := fv.cfg
	fs := pflag.NewFlagSet("etcd", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.SortFlags = false
	fs.BoolVar(&fv.showVersion, "version", false, "Print the version and exit.")
	fs.StringVar(&fv.configFile, "config-file", "", "Path to the server configuration file. Note that if a configuration file is provided, other command line flags and environment variables will be ignored.")
	fs.StringVar(&c.Name, "name", c.Name, "Human-readable name for this member.")
	fs.StringVar(&c.Dir, "data-dir", "", "Path to the data directory.")
	fs.StringSliceVar(&c.ListenClientUrls, "listen-client-urls", c.ListenClientUrls, "List of URLs to listen on for client traffic.")
	fs.StringSliceVar(&c.AdvertiseClientUrls, "advertise-client-urls", c.AdvertiseClientUrls, "List of this member's client URLs to advertise to the public.")
	fs.StringSliceVar(&c.ListenPeerUrls, "listen-peer-urls", c.ListenPeerUrls, "List of URLs to listen on for peer traffic.")
	fs.StringSliceVar(&c.AdvertisePeerUrls, "initial-advertise-peer-urls", c.AdvertisePeerUrls, "List of this member's peer URLs to advertise to the rest of the cluster.")
	fs.StringSliceVar(&c.ListenMetricsUrls, "listen-metrics-urls", nil, "List of URLs to listen on for the /metrics and /health endpoints.")
	fs.StringVar(&c.InitialCluster, "initial-cluster", "", "Initial cluster configuration for bootstrapping (default: name=initial-advertise-peer-urls).")
	fs.StringVar(&c.InitialClusterState, "initial-cluster-state", c.InitialClusterState, "Initial cluster state ('new' or 'existing').")
	fs.StringVar(&c.InitialClusterToken, "initial-cluster-token", c.InitialClusterToken, "Initial cluster token for the etcd cluster during bootstrap.")
	fs.Uint64Var(&c.SnapshotCount, "snapshot-count", c.SnapshotCount, "Number of committed transactions to trigger a snapshot to disk.")
	fs.Uint64Var(&c.SnapshotCatchUpEntries, "snapshot-catchup-entries", c.SnapshotCatchUpEntries, "Number of entries for a slow follower to catch up after compacting the raft storage entries.")
	fs.Uint64Var(&c.SnapshotCatchUpEntries, "experimental-snapshot-catchup-entries", c.SnapshotCatchUpEntries, "Number of entries for a slow follower to catch up after compacting the raft storage entries.")
	fs.MarkDeprecated("experimental-snapshot-catchup-entries", "use --snapshot-catchup-entries instead")
	fs.IntVar(&c.MaxSnapshots, "max-snapshots", c.MaxSnapshots, "Maximum number of snapshot files to retain (0 is unlimited).")
	fs.IntVar(&c.MaxLearners, "max-learners", c.MaxLearners, "Sets the maximum number of learners that can be available in the cluster membership.")
	fs.UintVar(&c.BootstrapDefragThresholdMegabytes, "bootstrap-defrag-threshold-megabytes", c.BootstrapDefragThresholdMegabytes, "Enable the defrag during etcd server bootstrap on condition that it will free at least the provided threshold of disk space. Needs to be set to non-zero value to take effect.")
	fs.UintVar(&c.BootstrapDefragThresholdMegabytes, "experimental-bootstrap-defrag-threshold-megabytes", c.BootstrapDefragThresholdMegabytes, "Enable the defrag during etcd server bootstrap on condition that it will free at least the provided threshold of disk space. Needs to be set to non-zero value to take effect.")
	fs.MarkDeprecated("experimental-bootstrap-defrag-threshold-megabytes", "use --bootstrap-defrag-threshold-megabytes instead")
	fs.UintVar(&c.TickMs, "heartbeat-interval", c.TickMs, "Time (in milliseconds) of a heartbeat interval.")
	fs.UintVar(&c.ElectionMs, "election-timeout", c.ElectionMs, "Time (in milliseconds) for an election to timeout.")
	fs.Int64Var(&c.QuotaBackendBytes, "quota-backend-bytes", 0, "Raise alarms when backend size exceeds the given quota. 0 means use the default quota.")
	fs.BoolVar(&c.StrictReconfigCheck, "strict-reconfig-check", c.StrictReconfigCheck, "Reject reconfiguration requests that would cause quorum loss.")
	fs.UintVar(&c.MaxRequestBytes, "max-request-bytes", c.MaxRequestBytes, "Maximum client request size in bytes the server will accept.")
	fs.UintVar(&c.MaxTxnOps, "max-txn-ops", c.MaxTxnOps, "Maximum number of operations permitted in a transaction.")
	fs.StringVar(&c.AutoCompactionMode, "auto-compaction-mode", c.AutoCompactionMode, "Interpret 'auto-compaction-retention' one of: periodic|revision.")
	fs.StringVar(&c.AutoCompactionRetention, "auto-compaction-retention", "0", "Auto compaction retention for mvcc key value store. 0 means disable auto compaction.")
	fs.DurationVar(&c.WatchProgressNotifyInterval, "watch-progress-notify-interval", c.WatchProgressNotifyInterval, "Duration of periodic watch progress notifications.")
	fs.DurationVar(&c.WatchProgressNotifyInterval, "experimental-watch-progress-notify-interval", c.WatchProgressNotifyInterval, "Duration of periodic watch progress notifications.")
	fs.MarkDeprecated("experimental-watch-progress-notify-interval", "use --watch-progress-notify-interval instead")
	fs.DurationVar(&c.LeaseCheckpointInterval, "lease-checkpoint-interval", c.LeaseCheckpointInterval, "Interval at which the leader checkpoints remaining lease TTLs, so a new leader does not reset them.")
	fs.DurationVar(&c.LeaseCheckpointInterval, "experimental-lease-checkpoint-interval", c.LeaseCheckpointInterval, "Interval at which the leader checkpoints remaining lease TTLs.")
	fs.MarkDeprecated("experimental-lease-checkpoint-interval", "use --lease-checkpoint-interval instead")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "Configures log level. Only supports debug, info, warn, error, panic, or fatal.")
	fs.StringVar(&c.ClientTLSInfo.CertFile, "cert-file", "", "Path to the client server TLS cert file.")
	fs.StringVar(&c.ClientTLSInfo.KeyFile, "key-file", "", "Path to the client server TLS key file.")
	fs.BoolVar(&c.ClientTLSInfo.ClientCertAuth, "client-cert-auth", false, "Enable client cert authentication.")
	fs.StringVar(&c.ClientTLSInfo.TrustedCAFile, "trusted-ca-file", "", "Path to the client server TLS trusted CA cert file.")
	fs.StringVar(&c.PeerTLSInfo.CertFile, "peer-cert-file", "", "Path to the peer server TLS cert file.")
	fs.StringVar(&c.PeerTLSInfo.KeyFile, "peer-key-file", "", "Path to the peer server TLS key file.")
	fs.BoolVar(&c.PeerTLSInfo.ClientCertAuth, "peer-client-cert-auth", false, "Enable peer client cert authentication.")
	fs.StringVar(&c.PeerTLSInfo.TrustedCAFile, "peer-trusted-ca-file", "", "Path to the peer server TLS trusted CA file.")
	addDiscoveryFlags(fs, fv)
	return fs, fv
}

// addDiscoveryFlags registers upstream's v3 discovery flags, and its v2 and DNS ones so that
// setting them gets a clear refusal rather than "unknown flag".
func addDiscoveryFlags(fs *pflag.FlagSet, fv *flagValues) {
	d := &fv.cfg.DiscoveryCfg
	fs.StringSliceVar(&d.Endpoints, "discovery-endpoints", nil, "V3 discovery: List of gRPC endpoints of the discovery service.")
	fs.StringVar(&d.Token, "discovery-token", "", "V3 discovery: discovery token for the etcd cluster to be bootstrapped.")
	fs.DurationVar(&d.DialTimeout, "discovery-dial-timeout", d.DialTimeout, "V3 discovery: dial timeout for client connections.")
	fs.DurationVar(&d.RequestTimeout, "discovery-request-timeout", d.RequestTimeout, "V3 discovery: timeout for discovery requests (excluding dial timeout).")
	fs.DurationVar(&d.KeepAliveTime, "discovery-keepalive-time", d.KeepAliveTime, "V3 discovery: keepalive time for client connections.")
	fs.DurationVar(&d.KeepAliveTimeout, "discovery-keepalive-timeout", d.KeepAliveTimeout, "V3 discovery: keepalive timeout for client connections.")
	fs.BoolVar(&d.Secure.InsecureTransport, "discovery-insecure-transport", true, "V3 discovery: disable transport security for client connections.")
	fs.BoolVar(&d.Secure.InsecureSkipVerify, "discovery-insecure-skip-tls-verify", false, "V3 discovery: skip server certificate verification (for testing only).")
	fs.StringVar(&d.Secure.Cert, "discovery-cert", "", "V3 discovery: identify secure client using this TLS certificate file.")
	fs.StringVar(&d.Secure.Key, "discovery-key", "", "V3 discovery: identify secure client using this TLS key file.")
	fs.StringVar(&d.Secure.Cacert, "discovery-cacert", "", "V3 discovery: verify certificates of TLS-enabled secure servers using this CA bundle.")
	fs.StringVar(&d.Auth.Username, "discovery-user", "", "V3 discovery: username[:password] for authentication.")
	fs.StringVar(&d.Auth.Password, "discovery-password", "", "V3 discovery: password for authentication (if this option is used, --discovery-user shouldn't include password).")
	fs.StringVar(&fv.discoveryFallback, "discovery-fallback", "exit", "Expected behavior ('exit') when discovery services fails.")
	fv.unsupported = map[string]*string{}
	for name, usage := range map[string]string{
		"discovery":          "V2 discovery URL (not supported: use --discovery-endpoints and --discovery-token).",
		"discovery-proxy":    "V2 discovery HTTP proxy (not supported).",
		"discovery-srv":      "DNS domain used to bootstrap initial cluster (not supported).",
		"discovery-srv-name": "Service name to query when using DNS discovery (not supported).",
	} {
		fv.unsupported[name] = fs.String(name, "", usage)
	}
}

// checkDiscoveryFlags refuses what this server does not implement, naming the flag.
func checkDiscoveryFlags(fs *pflag.FlagSet, fv *flagValues) error {
	switch fv.discoveryFallback {
	case "exit":
	case "proxy":
		return fmt.Errorf("v2 proxy is deprecated, and --discovery-fallback can't be configured as %q", "proxy")
	default:
		return fmt.Errorf("--discovery-fallback: invalid value %q (valid values: exit)", fv.discoveryFallback)
	}
	for _, name := range []string{"discovery", "discovery-proxy", "discovery-srv", "discovery-srv-name"} {
		if fs.Changed(name) {
			return fmt.Errorf("--%s is not supported by this server: bootstrap with --initial-cluster, or with v3 discovery (--discovery-endpoints and --discovery-token)", name)
		}
	}
	return nil
}

// ParseConfig turns arguments and environment into a Config. environ is os.Environ's form.
func ParseConfig(args, environ []string, stderr io.Writer) (*embed.Config, bool, error) {
	fs, fv := newFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, true, nil
		}
		return nil, false, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, false, usageError{fmt.Errorf("'%s' is not a valid flag", fs.Arg(0))}
	}
	if fv.showVersion {
		fmt.Fprint(os.Stdout, version.Banner())
		return nil, true, nil
	}
	if err := applyEnv(fs, environ, stderr); err != nil {
		return nil, false, usageError{err}
	}
	if err := checkDiscoveryFlags(fs, fv); err != nil {
		return nil, false, usageError{err}
	}
	if fv.configFile != "" {
		c, err := loadConfigFile(fv.configFile, stderr)
		if err != nil {
			return nil, false, usageError{err}
		}
		return c, false, nil
	}
	c := fv.cfg
	if fs.Changed("listen-client-urls") && !fs.Changed("advertise-client-urls") {
		return nil, false, usageError{fmt.Errorf("--advertise-client-urls is required when --listen-client-urls is set explicitly")}
	}
	return c, false, nil
}

// applyEnv sets flags not given on the command line from ETCD_<FLAG> variables.
func applyEnv(fs *pflag.FlagSet, environ []string, stderr io.Writer) error {
	known := map[string]bool{}
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		key := "ETCD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		known[key] = true
		val, ok := lookup(environ, key)
		if !ok {
			return
		}
		if fs.Changed(f.Name) {
			fmt.Fprintf(stderr, "etcd: environment variable %s is shadowed by the --%s flag\n", key, f.Name)
			return
		}
		if serr := fs.Set(f.Name, val); serr != nil {
			err = fmt.Errorf("invalid value %q for environment variable %s: %v", val, key, serr)
		}
	})
	if err != nil {
		return err
	}
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ETCD_") && !known[k] && !ignoredEnv[k] {
			fmt.Fprintf(stderr, "etcd: unrecognized environment variable %s\n", k)
		}
	}
	return nil
}

// ignoredEnv are ETCD_* variables upstream also leaves to other tools.
var ignoredEnv = map[string]bool{"ETCD_UNSUPPORTED_ARCH": true}

func lookup(environ []string, key string) (string, bool) {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// fileConfig is upstream's YAML config file (keys as the flag names).
type fileConfig struct {
	Name                        string  `json:"name"`
	DataDir                     string  `json:"data-dir"`
	ListenClientURLs            string  `json:"listen-client-urls"`
	AdvertiseClientURLs         string  `json:"advertise-client-urls"`
	ListenPeerURLs              string  `json:"listen-peer-urls"`
	InitialAdvertisePeerURLs    string  `json:"initial-advertise-peer-urls"`
	ListenMetricsURLs           string  `json:"listen-metrics-urls"`
	InitialCluster              string  `json:"initial-cluster"`
	InitialClusterState         string  `json:"initial-cluster-state"`
	InitialClusterToken         string  `json:"initial-cluster-token"`
	SnapshotCount               *uint64 `json:"snapshot-count"`
	SnapshotCatchUpEntries      *uint64 `json:"snapshot-catchup-entries"`
	MaxSnapshots                *int    `json:"max-snapshots"`
	MaxLearners                 *int    `json:"max-learners"`
	BootstrapDefragThresholdMB  *uint   `json:"bootstrap-defrag-threshold-megabytes"`
	ExpBootstrapDefragThreshMB  *uint   `json:"experimental-bootstrap-defrag-threshold-megabytes"`
	ExpSnapshotCatchUpEntries   *uint64 `json:"experimental-snapshot-catchup-entries"`
	HeartbeatInterval           *uint   `json:"heartbeat-interval"`
	ElectionTimeout             *uint   `json:"election-timeout"`
	QuotaBackendBytes           *int64  `json:"quota-backend-bytes"`
	MaxRequestBytes             *uint   `json:"max-request-bytes"`
	StrictReconfigCheck         *bool   `json:"strict-reconfig-check"`
	MaxTxnOps                   *uint   `json:"max-txn-ops"`
	AutoCompactionMode          string  `json:"auto-compaction-mode"`
	AutoCompactionRetention     string  `json:"auto-compaction-retention"`
	LogLevel                    string  `json:"log-level"`
	WatchProgressNotifyInterval string  `json:"watch-progress-notify-interval"`
	ClientTransportSecurity     fileTLS `json:"client-transport-security"`
	PeerTransportSecurity       fileTLS `json:"peer-transport-security"`
	// DiscoveryConfig is upstream's nested v3 discovery section (client settings and token).
	DiscoveryConfig *embed.DiscoveryConfig `json:"discovery-config"`
}

// fileTLS is a transport-security section of the config file.
type fileTLS struct {
	CertFile       string `json:"cert-file"`
	KeyFile        string `json:"key-file"`
	ClientCertAuth bool   `json:"client-cert-auth"`
	TrustedCAFile  string `json:"trusted-ca-file"`
}

func (f fileTLS) info() tlsutil.Info {
	return tlsutil.Info{CertFile: f.CertFile, KeyFile: f.KeyFile, ClientCertAuth: f.ClientCertAuth, TrustedCAFile: f.TrustedCAFile}
}

func loadConfigFile(path string, stderr io.Writer) (*embed.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config-file: %w", err)
	}
	// Nested sections decode over the defaults, as upstream's do.
	fc := fileConfig{DiscoveryConfig: &embed.NewConfig().DiscoveryCfg}
	if err := yaml.Unmarshal(b, &fc); err != nil {
		return nil, fmt.Errorf("--config-file %s: %w", path, err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err == nil {
		var unknown []string
		for k := range raw {
			if !fileKeys[k] {
				unknown = append(unknown, k)
			}
		}
		sort.Strings(unknown)
		if len(unknown) > 0 {
			fmt.Fprintf(stderr, "etcd: config file %s: ignoring keys this server does not implement: %s\n", path, strings.Join(unknown, ", "))
		}
	}
	c := embed.NewConfig()
	setStr := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	setList := func(dst *[]string, v string) {
		if v != "" {
			*dst = strings.Split(v, ",")
		}
	}
	setStr(&c.Name, fc.Name)
	setStr(&c.Dir, fc.DataDir)
	setList(&c.ListenClientUrls, fc.ListenClientURLs)
	setList(&c.AdvertiseClientUrls, fc.AdvertiseClientURLs)
	setList(&c.ListenPeerUrls, fc.ListenPeerURLs)
	setList(&c.AdvertisePeerUrls, fc.InitialAdvertisePeerURLs)
	setList(&c.ListenMetricsUrls, fc.ListenMetricsURLs)
	setStr(&c.InitialCluster, fc.InitialCluster)
	setStr(&c.InitialClusterState, fc.InitialClusterState)
	setStr(&c.InitialClusterToken, fc.InitialClusterToken)
	setStr(&c.AutoCompactionMode, fc.AutoCompactionMode)
	setStr(&c.AutoCompactionRetention, fc.AutoCompactionRetention)
	setStr(&c.LogLevel, fc.LogLevel)
	if fc.SnapshotCount != nil {
		c.SnapshotCount = *fc.SnapshotCount
	}
	if fc.MaxSnapshots != nil {
		c.MaxSnapshots = *fc.MaxSnapshots
	}
	if fc.MaxLearners != nil {
		c.MaxLearners = *fc.MaxLearners
	}
	for _, v := range []*uint{fc.ExpBootstrapDefragThreshMB, fc.BootstrapDefragThresholdMB} {
		if v != nil {
			c.BootstrapDefragThresholdMegabytes = *v
		}
	}
	for _, v := range []*uint64{fc.ExpSnapshotCatchUpEntries, fc.SnapshotCatchUpEntries} {
		if v != nil {
			c.SnapshotCatchUpEntries = *v
		}
	}
	if fc.HeartbeatInterval != nil {
		c.TickMs = *fc.HeartbeatInterval
	}
	if fc.ElectionTimeout != nil {
		c.ElectionMs = *fc.ElectionTimeout
	}
	if fc.QuotaBackendBytes != nil {
		c.QuotaBackendBytes = *fc.QuotaBackendBytes
	}
	if fc.MaxRequestBytes != nil {
		c.MaxRequestBytes = *fc.MaxRequestBytes
	}
	if fc.StrictReconfigCheck != nil {
		c.StrictReconfigCheck = *fc.StrictReconfigCheck
	}
	if fc.MaxTxnOps != nil {
		c.MaxTxnOps = *fc.MaxTxnOps
	}
	if fc.DiscoveryConfig != nil { // nil when the file says "discovery-config: null"
		c.DiscoveryCfg = *fc.DiscoveryConfig
	}
	c.ClientTLSInfo = fc.ClientTransportSecurity.info()
	c.PeerTLSInfo = fc.PeerTransportSecurity.info()
	if fc.WatchProgressNotifyInterval != "" {
		d, err := time.ParseDuration(fc.WatchProgressNotifyInterval)
		if err != nil {
			return nil, fmt.Errorf("--config-file %s: watch-progress-notify-interval: %w", path, err)
		}
		c.WatchProgressNotifyInterval = d
	}
	return c, nil
}

var fileKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{"name", "data-dir", "listen-client-urls", "advertise-client-urls", "listen-peer-urls",
		"initial-advertise-peer-urls", "listen-metrics-urls", "initial-cluster", "initial-cluster-state",
		"initial-cluster-token", "snapshot-count", "snapshot-catchup-entries", "experimental-snapshot-catchup-entries", "max-snapshots", "max-learners", "bootstrap-defrag-threshold-megabytes", "experimental-bootstrap-defrag-threshold-megabytes", "heartbeat-interval", "election-timeout", "quota-backend-bytes",
		"max-request-bytes", "max-txn-ops", "auto-compaction-mode", "auto-compaction-retention", "log-level",
		"watch-progress-notify-interval", "client-transport-security", "peer-transport-security", "discovery-config"} {
		m[k] = true
	}
	return m
}()

// Main runs the etcd command and returns the process exit status.
func Main(args []string, environ []string, stderr io.Writer) int {
	cfg, done, err := ParseConfig(args, environ, stderr)
	if done {
		return 0
	}
	if err == nil {
		err = validate(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "etcd: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			return ExitUsage
		}
		return 1
	}
	if err := version.CheckBuild(buildinfo.Version); err != nil {
		fmt.Fprintf(stderr, "etcd: %v\n", err)
		return 1
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "etcd: %v\n", err)
		var derr *etcdserver.DiscoveryError
		if errors.As(err, &derr) {
			fmt.Fprintln(stderr, "etcd: do not reuse a discovery token; create a new one to bootstrap a cluster (check the data dir if a previous bootstrap succeeded)")
		}
		return 1
	}
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT)
	select {
	case sig := <-sigc:
		fmt.Fprintf(stderr, "etcd: received %s, shutting down\n", sig)
		e.Close()
		return 0
	case <-e.Server.Done():
		e.Close()
		if e.Server.RemovedFromCluster() {
			fmt.Fprintln(stderr, "etcd: the member has been permanently removed from the cluster")
			return 0
		}
		fmt.Fprintln(stderr, "etcd: member stopped after a fatal error (see log)")
		return 1
	case err := <-e.Err():
		fmt.Fprintf(stderr, "etcd: serving failed: %v\n", err)
		e.Close()
		return 1
	}
}

// validate reports configuration errors as usage errors (they name the flag).
func validate(c *embed.Config) error {
	if err := c.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}
