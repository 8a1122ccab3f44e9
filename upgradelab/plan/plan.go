package plan

import (
	"embed"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Plan is one scenario.
type Plan struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Members is the cluster size (the command line may override it).
	Members int `json:"members"`
	// Start is the subject every member starts as: a level (3.6), a full version (3.5.35) or
	// the name of a binary given on the command line (e.g. upstream-3.5.35).
	Start string `json:"start"`
	// Thresholds fail the run when availability falls short (the command line may set them
	// too; the plan's win).
	Thresholds Thresholds `json:"thresholds,omitempty"`
	// Auth runs the plan with authentication on: root, and a user allowed one prefix, made
	// and auth enabled right after the cluster starts; the workload and the steps act as
	// root, and the run fails unless users, roles and permissions come through unchanged.
	Auth  bool   `json:"auth,omitempty"`
	Steps []Step `json:"steps"`
	// Seed is set on plans the generator built: the seed that rebuilds them.
	Seed uint64 `json:"seed,omitempty"`
}

// Thresholds bound what the workload may suffer. Zero means no bound.
type Thresholds struct {
	// MaxStall is the longest a step may go without any write succeeding.
	MaxStall Duration `json:"maxStall,omitempty"`
	// MaxFailed is how many requests of the whole run may fail.
	MaxFailed int `json:"maxFailed,omitempty"`
}

// Step is exactly one action, plus optional bounds of its own.
type Step struct {
	// Replace swaps members' binaries one at a time (stop, start the other subject, wait
	// until healthy), as an operator does in a rolling upgrade or downgrade.
	Replace *Replace `json:"replace,omitempty"`
	// Downgrade calls Maintenance.Downgrade.
	Downgrade *Downgrade `json:"downgrade,omitempty"`
	// Expect waits until the cluster shows what it lists.
	Expect *Expect `json:"expect,omitempty"`
	// Kill sends SIGKILL to a member (a name, "leader" or "follower", chosen when the step
	// runs); Restart starts a stopped member (or "all" of them) with its current binary.
	Kill    string `json:"kill,omitempty"`
	Restart string `json:"restart,omitempty"`
	// Partition cuts a member (a name, "leader" or "follower") off the network; Heal
	// reconnects it (or "all"). Containers only.
	Partition string `json:"partition,omitempty"`
	Heal      string `json:"heal,omitempty"`
	// Freeze stops a member's process without ending it (SIGSTOP, docker pause); Thaw
	// resumes it (or "all").
	Freeze string `json:"freeze,omitempty"`
	Thaw   string `json:"thaw,omitempty"`
	// Wait lets the workload run for a while.
	Wait Duration `json:"wait,omitempty"`
	// Add adds a member (voter or learner) at a subject; it is named m<N+1>.
	Add *Add `json:"add,omitempty"`
	// Promote makes a learner a voter; Remove takes a member out of the cluster and stops it.
	Promote string `json:"promote,omitempty"`
	Remove  string `json:"remove,omitempty"`
	// Compact compacts the keyspace at the current revision.
	Compact *Compact `json:"compact,omitempty"`
	// Defrag defragments a member's database (or "all").
	Defrag string `json:"defrag,omitempty"`
	// Refuse proves a start that must be refused: a member replaced by, or a new member
	// joining at, a subject the cluster must not accept.
	Refuse *Refuse `json:"refuse,omitempty"`
	// Crash has a member panic at one of its failpoints (upstream's gofail names; see
	// docs/operations.md): the member must run a failpoint build (make build-failpoints, then
	// --bin-dir bin/failpoints) on the process runtime. A restart step brings it back.
	Crash *Crash `json:"crash,omitempty"`
	// Snapshot waits until every running member has saved a snapshot, writing filler entries
	// to get there: on the way from 3.5 through 3.6 to 3.7, the entries 3.5 members left in
	// every WAL must be behind each member's newest snapshot before 3.7 starts on it.
	Snapshot *Snapshot `json:"snapshot,omitempty"`

	// MaxStall overrides the plan's threshold for this step (e.g. a step that takes quorum
	// away on purpose).
	MaxStall Duration `json:"maxStall,omitempty"`
}

// Snapshot bounds a snapshot step: at most MaxEntries filler writes (0: 150,000, more than
// the largest default --snapshot-count, 3.5's 100,000).
type Snapshot struct {
	MaxEntries int `json:"maxEntries,omitempty"`
}

// Replace names the subject to move to and, optionally, which members (default: all, in
// order; "leader" is whoever leads when the step runs) and in what order as to leadership.
type Replace struct {
	Version string   `json:"version"`
	Members []string `json:"members,omitempty"`
	// Order is "" (as listed), leader-first or leader-last: the current leader moves to the
	// front or the back of the members when the step runs.
	Order string `json:"order,omitempty"`
}

// Crash names the member (a name, "leader" or "follower") and the failpoint it crashes at.
type Crash struct {
	Member string `json:"member"`
	At     string `json:"at"`
}

// Replace orders.
const (
	OrderLeaderFirst = "leader-first"
	OrderLeaderLast  = "leader-last"
)

// Downgrade is one of validate, enable or cancel, with the target level.
type Downgrade struct {
	Action  string `json:"action"`
	Version string `json:"version"`
	// Error, when set, is a text the call must fail with (a refusal the plan proves).
	Error string `json:"error,omitempty"`
}

// Expect lists conditions that must all hold on every running member within Timeout.
type Expect struct {
	// Cluster and Storage are levels (major.minor); a member that reports no storage version
	// is at 3.5 (the spec: absent means 3.5).
	Cluster string `json:"cluster,omitempty"`
	Storage string `json:"storage,omitempty"`
	// Server is the level of every member's binary.
	Server string `json:"server,omitempty"`
	// Log is a text that must appear in some member's log.
	Log     string   `json:"log,omitempty"`
	Timeout Duration `json:"timeout,omitempty"`
}

// Add is a new member's subject and kind.
type Add struct {
	Version string `json:"version"`
	Learner bool   `json:"learner,omitempty"`
}

// Compact is a compaction; Physical waits until the database has dropped the revisions.
type Compact struct {
	Physical bool `json:"physical,omitempty"`
}

// Refuse is a start that must fail: Member's binary replaced by Version, or (Join) a new
// member added at Version. Error is a text the refused member must log. Afterwards the
// member runs its old binary again, or the joiner is removed.
type Refuse struct {
	Member  string `json:"member,omitempty"`
	Join    bool   `json:"join,omitempty"`
	Version string `json:"version"`
	Error   string `json:"error"`
}

// Duration reads "30s"-style YAML values.
type Duration time.Duration

// UnmarshalJSON accepts a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// Subjects are the binaries the plan needs: levels, full versions and named binaries.
func (p *Plan) Subjects() []string {
	seen := map[string]bool{p.Start: true}
	for _, s := range p.Steps {
		switch {
		case s.Replace != nil:
			seen[s.Replace.Version] = true
		case s.Add != nil:
			seen[s.Add.Version] = true
		case s.Refuse != nil:
			seen[s.Refuse.Version] = true
		}
	}
	var out []string
	for l := range seen {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// Parse reads a plan from YAML, refusing unknown fields.
func Parse(b []byte) (*Plan, error) {
	var p Plan
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

//go:embed plans/*.yaml
var builtin embed.FS

// Builtin lists the built-in plans by name.
func Builtin() ([]*Plan, error) {
	entries, err := builtin.ReadDir("plans")
	if err != nil {
		return nil, err
	}
	var out []*Plan
	for _, e := range entries {
		b, err := builtin.ReadFile(path.Join("plans", e.Name()))
		if err != nil {
			return nil, err
		}
		p, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("built-in plan %s: %w", e.Name(), err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Load finds a built-in plan by name, or reads a plan file (a name ending in .yaml or .yml,
// or containing a slash).
func Load(nameOrPath string) (*Plan, error) {
	if strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml") || strings.Contains(nameOrPath, "/") {
		b, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, err
		}
		p, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", nameOrPath, err)
		}
		return p, nil
	}
	plans, err := Builtin()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range plans {
		if p.Name == nameOrPath {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return nil, fmt.Errorf("no built-in plan %q (built-in: %s; or give a .yaml file)", nameOrPath, strings.Join(names, ", "))
}
