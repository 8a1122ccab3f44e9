package embed

import (
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"etcdx/pkg/buildinfo"
	"etcdx/server/compactor"
	"etcdx/server/etcdserver"
	"etcdx/server/features"
	"etcdx/server/version"
	"etcdx/server/wal"
)

// startupFields are the fields of upstream's "starting an etcd server" event at the level this
// binary implements, in upstream's order and with upstream's spelling of each value (durations
// as Go prints them, URL lists as lists), so log pipelines and upstream's tests that read the
// line (its e2e TestV2DeprecationEnforceDefaultValue) find what they expect. This
// implementation's own identity follows as one extra field.
func startupFields(cfg *Config, localAddr string) []any {
	level := version.Local()
	at36 := !level.Less(version.V3_6)
	at37 := !level.Less(version.V3_7)
	walDir := cfg.WalDir
	if walDir == "" {
		walDir = filepath.Join(cfg.Dir, "member", "wal")
	}
	period, revisions, _ := compactor.ParseRetention(cfg.AutoCompactionMode, cfg.AutoCompactionRetention) // checked by Validate
	retention := period
	if revisions > 0 {
		retention = time.Duration(revisions) // upstream keeps a revision count in a Duration
	}
	quota := cfg.QuotaBackendBytes
	if quota == 0 {
		quota = etcdserver.DefaultQuotaBackendBytes // what the member will use
	}
	f := []any{"etcd-version", buildinfo.Version, "git-sha", buildinfo.GitSHA,
		"go-version", runtime.Version(), "go-os", runtime.GOOS, "go-arch", runtime.GOARCH,
		"max-cpu-set", runtime.GOMAXPROCS(0), "max-cpu-available", runtime.NumCPU(),
		"member-initialized", wal.Exist(walDir), "name", cfg.Name, "data-dir", cfg.Dir,
		"wal-dir", cfg.WalDir, "wal-dir-dedicated", cfg.WalDir, "member-dir", filepath.Join(cfg.Dir, "member"),
		"force-new-cluster", cfg.ForceNewCluster,
		"heartbeat-interval", (time.Duration(cfg.TickMs) * time.Millisecond).String(),
		"election-timeout", (time.Duration(cfg.ElectionMs) * time.Millisecond).String(),
		"initial-election-tick-advance", cfg.InitialElectionTickAdvance,
		"snapshot-count", cfg.SnapshotCount, "max-wals", cfg.MaxWals, "max-snapshots", cfg.MaxSnapshots,
		"snapshot-catchup-entries", cfg.SnapshotCatchUpEntries,
		"initial-advertise-peer-urls", cfg.AdvertisePeerUrls, "listen-peer-urls", cfg.ListenPeerUrls,
		"advertise-client-urls", cfg.AdvertiseClientUrls, "listen-client-urls", cfg.ListenClientUrls,
		"listen-metrics-urls", nonNil(cfg.ListenMetricsUrls)}
	switch {
	case at37:
		f = append(f, "local-address", localAddr)
	case at36:
		f = append(f, "experimental-local-address", localAddr)
	}
	f = append(f, "cors", cfg.CORS, "host-whitelist", cfg.HostWhitelist,
		"initial-cluster", cfg.InitialCluster, "initial-cluster-state", cfg.InitialClusterState,
		"initial-cluster-token", cfg.InitialClusterToken, "quota-backend-bytes", quota,
		"max-request-bytes", cfg.MaxRequestBytes, "max-concurrent-streams", cfg.MaxConcurrentStreams,
		"pre-vote", cfg.PreVote)
	if at36 {
		f = append(f, "feature-gates", cfg.Features.String())
	}
	f = append(f, "initial-corrupt-check", cfg.Features.Enabled(features.InitialCorruptCheck),
		"corrupt-check-time-interval", cfg.CorruptCheckTime.String())
	if !at36 {
		f = append(f, "compact-check-time-enabled", cfg.Features.Enabled(features.CompactHashCheck))
	}
	f = append(f, "compact-check-time-interval", cfg.CompactHashCheckTime.String(),
		"auto-compaction-mode", cfg.AutoCompactionMode, "auto-compaction-retention", retention.String(),
		"auto-compaction-interval", retention.String()) // upstream prints the retention again here
	if !at37 {
		f = append(f, "discovery-url", cfg.Durl, "discovery-proxy", cfg.DProxy)
	}
	if at36 {
		f = append(f, discoveryFields(&cfg.DiscoveryCfg)...)
	}
	f = append(f, "downgrade-check-interval", cfg.DowngradeCheckTime.String())
	if at36 {
		// The v2 store's deprecation stage is enforced at write-only from 3.6, whatever the flag.
		f = append(f, "max-learners", cfg.MaxLearners, "v2-deprecation", "write-only")
	}
	return append(f, "implementation", buildinfo.Identity())
}

// discoveryFields are the v3 discovery settings as upstream 3.6 and 3.7 print them, with the
// client defaults it fills in where nothing was set.
func discoveryFields(d *DiscoveryConfig) []any {
	or := func(v, def time.Duration) string {
		if v == 0 {
			v = def
		}
		return v.String()
	}
	insecureTransport, skipVerify := true, false
	var cert, key, cacert, user string
	if s := d.Secure; s != nil {
		insecureTransport, skipVerify, cert, key, cacert = s.InsecureTransport, s.InsecureSkipVerify, s.Cert, s.Key, s.Cacert
	}
	if a := d.Auth; a != nil {
		user = a.Username
	}
	return []any{"discovery-token", d.Token, "discovery-endpoints", strings.Join(d.Endpoints, ","),
		"discovery-dial-timeout", or(d.DialTimeout, 2*time.Second), "discovery-request-timeout", or(d.RequestTimeout, 5*time.Second),
		"discovery-keepalive-time", or(d.KeepAliveTime, 2*time.Second), "discovery-keepalive-timeout", or(d.KeepAliveTimeout, 6*time.Second),
		"discovery-insecure-transport", insecureTransport, "discovery-insecure-skip-tls-verify", skipVerify,
		"discovery-cert", cert, "discovery-key", key, "discovery-cacert", cacert, "discovery-user", user}
}

// nonNil prints an empty list as [] rather than null, as upstream's zap does.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
