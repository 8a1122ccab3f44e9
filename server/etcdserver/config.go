package etcdserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"etcdx/pkg/buildinfo"
	"etcdx/server/features"
	"etcdx/server/membership"
	"etcdx/server/schema"
	"etcdx/server/version"
	"etcdx/server/wal"
)

// Config is everything a member needs to start.
type Config struct {
	// V2Deprecation is the v2 store's deprecation stage ("": the level's default, not-yet at 3.5,
	// write-only from 3.6): from write-only on, custom v2 content in the data dir stops the start.
	V2Deprecation       string
	Name                string
	DataDir             string
	PeerURLs            []string // advertised peer URLs of this member
	ClientURLs          []string // advertised client URLs of this member
	InitialCluster      map[string][]string
	InitialClusterToken string
	NewCluster          bool
	// Discover, when set, learns the initial cluster of a new cluster from a discovery service
	// instead of InitialCluster (which then holds only this member). It gets this member's ID
	// and returns every member's name and peer URLs.
	Discover func(ctx context.Context, selfID uint64) (map[string][]string, error)
	// DiscoveryProtocol names Discover's protocol in the log ("v3", or "v2" for --discovery).
	DiscoveryProtocol string

	SnapshotCount          uint64
	SnapshotCatchUpEntries uint64
	// MaxSnapshots is how many raft snapshot files to keep; 0 keeps them all, as upstream.
	MaxSnapshots int
	// MaxLearners is how many learners the cluster may have (--max-learners; 0: upstream's 1).
	MaxLearners int
	// BootstrapDefragThresholdMegabytes defragments the backend at start when at least this much
	// of it is free (0: never).
	BootstrapDefragThresholdMegabytes uint
	TickMs                            uint
	ElectionTicks                     int

	QuotaBackendBytes int64
	MaxRequestBytes   uint
	MaxTxnOps         uint

	AutoCompactionMode      string // "periodic" or "revision"
	AutoCompactionRetention string

	// StrictReconfigCheck refuses membership changes that would leave too few started or
	// connected voters for a quorum.
	StrictReconfigCheck bool
	// LeaseCheckpointInterval is how often the leader records remaining lease TTLs.
	LeaseCheckpointInterval time.Duration

	// AuthToken is --auth-token ("simple", or "jwt,..."); AuthTokenTTL is how long an unused
	// simple token lives; BcryptCost hashes new passwords.
	AuthToken    string
	AuthTokenTTL time.Duration
	BcryptCost   int
	// ClientCertAuth: a client that sends no token is the user its certificate's common name
	// names (--client-cert-auth).
	ClientCertAuth bool

	// Features are the --feature-gates (nil: upstream's defaults).
	Features *features.Gates
	// ForceNewCluster restarts the member as a one-member cluster from its data.
	ForceNewCluster bool
	// WalDir, when set, holds the WAL instead of member/wal (--wal-dir).
	WalDir string
	// MaxWals is how many WAL segment files to keep once snapshots cover them (0: all).
	MaxWals int
	// PreVote runs raft's pre-vote phase; InitialElectionTickAdvance fast-forwards the
	// election timer at start, as upstream's flags of the same names.
	PreVote                    bool
	InitialElectionTickAdvance bool
	// Backend commit batching and bbolt's freelist ("map" or "array").
	BackendBatchInterval time.Duration
	BackendBatchLimit    int
	BackendFreelistType  string
	// UnsafeNoFsync skips every fsync (--unsafe-no-fsync): a crash can lose acknowledged writes.
	UnsafeNoFsync bool
	// CompactionBatchLimit revisions are deleted per batch, CompactionSleepInterval apart.
	CompactionBatchLimit    int
	CompactionSleepInterval time.Duration
	// DowngradeCheckTime is the longest interval between the leader's version checks.
	DowngradeCheckTime time.Duration
	// CorruptCheckTime is how often the leader compares hashes with the other members
	// (--corrupt-check-time; 0: never).
	CorruptCheckTime time.Duration
	// CompactHashCheckTime is how often the leader compares compacted revisions' hashes (with
	// the CompactHashCheck gate).
	CompactHashCheckTime time.Duration
	// WarningApplyDuration: applying a request that takes longer is logged.
	WarningApplyDuration time.Duration

	Logger   *slog.Logger
	Registry *prometheus.Registry
	// PeerReadTimeout paces the link heartbeats on peer streams (a third of it) and
	// PeerWriteTimeout bounds each write on them (--raft-read-timeout, --raft-write-timeout; 0: 5 s).
	PeerReadTimeout, PeerWriteTimeout time.Duration
	// PeerLocalAddr, when set, is the IP this member dials its peers from (SetMemberLocalAddr).
	PeerLocalAddr string
	// PeerTLS, when set, is how this member dials its peers (https peer URLs).
	PeerTLS *tls.Config
	// Peers is how the member reaches the others (nil: the network, NetworkPeers).
	Peers PeerNetwork
	// LeaseClock is the clock the lessor judges expiry by (nil: time.Now); the simulation's can
	// jump.
	LeaseClock func() time.Time
	// Level is the etcd line this member runs as (zero: the binary's, version.Local()): what it
	// publishes, which peers and cluster versions it accepts, where it migrates its storage. The
	// simulation runs members of different levels in one process.
	Level version.Level
	// WALDisk is how the WAL's appends reach stable storage (nil: the file and fdatasync); the
	// simulation's can lose what was not synced.
	WALDisk wal.Disk
}

// Defaults as upstream etcd 3.6.
const (
	DefaultSnapshotCount           = 10000
	DefaultSnapshotCatchUpEntries  = 5000
	DefaultMaxSnapshots            = 5
	DefaultQuotaBackendBytes       = 2 << 30
	MaxQuotaBackendBytes           = 8 << 30
	DefaultMaxRequestBytes         = 1.5 * 1024 * 1024
	DefaultMaxTxnOps               = 128
	DefaultLeaseCheckpointInterval = 5 * time.Minute
	DefaultWarningApplyDuration    = 100 * time.Millisecond
	DefaultDowngradeCheckTime      = 5 * time.Second
	DefaultCompactionBatchLimit    = 1000
	// versionCheckInterval is how often the version loop runs at most (ours, faster than
	// upstream's DowngradeCheckTime default, so versions settle within a second).
	versionCheckInterval = time.Second
	// grpcOverheadBytes is added to the request limit for the gRPC receive limit, as upstream.
	GRPCOverheadBytes = 512 * 1024
)

func (c *Config) walDir() string {
	if c.WalDir != "" {
		return c.WalDir
	}
	return schema.WALDir(c.DataDir)
}
func (c *Config) snapDir() string { return schema.SnapDir(c.DataDir) }

// BackendPath is where the bbolt file lives.
func (c *Config) BackendPath() string { return schema.BackendPath(c.DataDir) }

func (c *Config) heartbeat() time.Duration { return time.Duration(c.TickMs) * time.Millisecond }

func (c *Config) electionTimeout() time.Duration {
	return time.Duration(c.ElectionTicks) * c.heartbeat()
}

// requestTimeout bounds how long a proposal may wait, as upstream: 5s plus two elections.
func (c *Config) requestTimeout() time.Duration { return 5*time.Second + 2*c.electionTimeout() }

// confChangeRetry is how long a conf change may go unapplied before it is proposed again: far
// longer than a commit normally takes, so copies are rare.
func (c *Config) confChangeRetry() time.Duration { return c.electionTimeout() }

func (c *Config) validate() error {
	if c.Name == "" {
		return fmt.Errorf("member name is empty")
	}
	if c.DataDir == "" {
		return fmt.Errorf("data dir is empty")
	}
	if c.TickMs == 0 || c.ElectionTicks < 5 {
		return fmt.Errorf("election timeout must be at least 5 heartbeat intervals")
	}
	if len(c.PeerURLs) == 0 {
		return fmt.Errorf("no advertised peer URLs")
	}
	if c.SnapshotCount == 0 {
		c.SnapshotCount = DefaultSnapshotCount
	}
	if c.SnapshotCatchUpEntries == 0 {
		c.SnapshotCatchUpEntries = DefaultSnapshotCatchUpEntries
	}
	if c.SnapshotCatchUpEntries > c.SnapshotCount {
		c.SnapshotCatchUpEntries = c.SnapshotCount
	}
	if c.QuotaBackendBytes == 0 {
		c.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	if c.WarningApplyDuration == 0 {
		c.WarningApplyDuration = DefaultWarningApplyDuration
	}
	if c.DowngradeCheckTime == 0 {
		c.DowngradeCheckTime = DefaultDowngradeCheckTime
	}
	if c.CompactionBatchLimit == 0 {
		c.CompactionBatchLimit = DefaultCompactionBatchLimit
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxLearners == 0 {
		c.MaxLearners = membership.DefaultMaxLearners
	}
	if c.MaxTxnOps == 0 {
		c.MaxTxnOps = DefaultMaxTxnOps
	}
	if c.LeaseCheckpointInterval == 0 {
		c.LeaseCheckpointInterval = DefaultLeaseCheckpointInterval
	}
	if c.Level.IsZero() {
		c.Level = version.Local()
	}
	if !version.IsKnown(c.Level) {
		return fmt.Errorf("level %s: the tree implements %v", c.Level, version.Known())
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	return nil
}

// peerHTTPClient sends peer requests through the configured peer network.
func (c *Config) peerHTTPClient(timeout time.Duration) *http.Client {
	return c.peers().HTTPClient(timeout)
}

// DiscoveryError is a failed discovery bootstrap; its text is upstream's.
type DiscoveryError struct {
	Op  string
	Err error
}

func (e *DiscoveryError) Error() string {
	return fmt.Sprintf("failed to %s discovery cluster (%v)", e.Op, e.Err)
}
func (e *DiscoveryError) Unwrap() error { return e.Err }

// release is the upstream patch release this member's level implements, what it reports as its
// version to peers and clients.
func (c *Config) release() string { return buildinfo.UpstreamRelease(c.Level.String()) }
