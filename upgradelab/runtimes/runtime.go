package runtimes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/netns"
	"etcdx/upgradelab/plan"
)

// Runtime makes members and removes everything it made.
type Runtime interface {
	// Name is "process", "netns" or "container".
	Name() string
	// Supports says whether the runtime can run steps of kind k (nil) or why not.
	Supports(k plan.StepKind) error
	// NewMember prepares a member (addresses, data location, log file); nothing runs yet.
	NewMember(ctx context.Context, spec Spec) (Member, error)
	// HostIP is the address at which members reach the machine the lab runs on (for the
	// lab's trace receiver).
	HostIP() netip.Addr
	// Close stops and removes every member, and everything else the runtime created.
	Close(ctx context.Context) error
}

// Spec is what a member is asked to be.
type Spec struct {
	Name string
	// LogPath receives the member's output across all its runs.
	LogPath string
	// Token is --initial-cluster-token.
	Token string
	// Extra, when set, gives flags to add to a start with bin (e.g. tracing flags, which are
	// spelled differently by different releases).
	Extra func(bin cluster.Binary) []string
}

func (s Spec) extra(bin cluster.Binary) []string {
	if s.Extra == nil {
		return nil
	}
	return s.Extra(bin)
}

// Member is one etcd member of a run.
type Member interface {
	Name() string
	// ClientURL and PeerURL are the advertised URLs; the lab reaches the member at ClientURL.
	ClientURL() string
	PeerURL() string
	// Join sets --initial-cluster and --initial-cluster-state for the next start.
	Join(initialCluster, state string)
	// Binary is what the member runs or last ran.
	Binary() cluster.Binary
	// Start runs the member with bin, keeping its data.
	Start(ctx context.Context, bin cluster.Binary) error
	// Stop ends it with SIGTERM (thawing it first); Kill with SIGKILL.
	Stop(ctx context.Context) error
	Kill(ctx context.Context) error
	Freeze(ctx context.Context) error
	Thaw(ctx context.Context) error
	Partition(ctx context.Context) error
	Heal(ctx context.Context) error
	// Running says whether the member's process is alive (frozen counts as alive).
	Running(ctx context.Context) bool
	Frozen() bool
	Partitioned() bool
	// WaitHealthy waits for /health to answer 200; it fails early if the member exits.
	WaitHealthy(ctx context.Context) error
	// WaitExit waits for the member to exit by itself.
	WaitExit(ctx context.Context) error
	Versions(ctx context.Context) (cluster.Versions, error)
	// Metrics reads the member's /metrics (what the lab looks at there).
	Metrics(ctx context.Context) (cluster.Metrics, error)
	// Log is the member's output of all its runs so far.
	Log(ctx context.Context) string
	// Seed fills the member's data dir before its first start (a snapshot restored into it):
	// in place for processes, staged and copied into the volume at the first start for a
	// container.
	Seed(ctx context.Context, fill func(dataDir string) error) error
	// Failpoints is the base URL where the member serves its gofail failpoints (its binary
	// answers there when built with them; GOFAIL_HTTP), or "" when the runtime does not give it
	// one.
	Failpoints() string
}

// ErrNoEngine says a container runtime was asked for where no Docker engine answers.
var ErrNoEngine = errors.New("no Docker engine")

// New makes the runtime called name: "container", "process", "netns" (processes in network
// namespaces) or "auto": containers when an engine answers, else processes, in namespaces when
// partitions says the plan cuts members off and namespaces can be made here. notice says what
// auto chose and why, for the user.
func New(ctx context.Context, name, runDir string, partitions bool) (rt Runtime, notice string, err error) {
	switch name {
	case "process":
		return NewProcess(runDir), "", nil
	case "netns":
		ns, err := NewNetns(ctx, runDir)
		if err != nil {
			return nil, "", err
		}
		return ns, "", nil
	case "container":
		rt, err := NewDocker(ctx, runDir)
		return rt, "", err
	case "auto", "":
		rt, err := NewDocker(ctx, runDir)
		if err == nil {
			return rt, "", nil
		}
		if !errors.Is(err, ErrNoEngine) {
			return nil, "", err
		}
		if !partitions {
			return NewProcess(runDir), fmt.Sprintf("%v: members run as local processes", err), nil
		}
		if nsErr := netns.Available(); nsErr != nil {
			return NewProcess(runDir), fmt.Sprintf("%v, and %v: members run as local processes (partition steps are refused)", err, nsErr), nil
		}
		ns, nsErr := NewNetns(ctx, runDir)
		if nsErr != nil {
			return nil, "", nsErr
		}
		return ns, fmt.Sprintf("%v: members run as local processes, each in a network namespace of its own", err), nil
	}
	return nil, "", fmt.Errorf("unknown runtime %q (container, process, netns or auto)", name)
}

// life is the state both runtimes keep about a member between calls.
type life struct {
	bin            cluster.Binary
	initialCluster string
	state          string
	frozen         bool
	partitioned    bool
}

func (l *life) Join(initialCluster, state string) { l.initialCluster, l.state = initialCluster, state }
func (l *life) Binary() cluster.Binary            { return l.bin }
func (l *life) Frozen() bool                      { return l.frozen }
func (l *life) Partitioned() bool                 { return l.partitioned }
