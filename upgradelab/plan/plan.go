// Package plan reads upgrade and downgrade plans: the cluster a run starts with and the steps
// it goes through (replace binaries, drive a downgrade, kill or restart members, expect
// versions). Plans are YAML; the built-in ones live in plans/.
package plan

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
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
	// Start is the subject every member starts as: a level (major.minor, the binary given for
	// it) or the name of a binary given on the command line (e.g. upstream-3.5.17).
	Start string `json:"start"`
	Steps []Step `json:"steps"`
}

// Step is exactly one of its fields.
type Step struct {
	// Replace swaps members' binaries one at a time (stop, start the other level, wait until
	// healthy), as an operator does in a rolling upgrade or downgrade.
	Replace *Replace `json:"replace,omitempty"`
	// Downgrade calls Maintenance.Downgrade.
	Downgrade *Downgrade `json:"downgrade,omitempty"`
	// Expect waits until the cluster shows what it lists.
	Expect *Expect `json:"expect,omitempty"`
	// Kill sends SIGKILL to a member; Restart starts it again with its current binary.
	Kill    string `json:"kill,omitempty"`
	Restart string `json:"restart,omitempty"`
	// Pause lets the workload run for a while.
	Pause Duration `json:"pause,omitempty"`
}

// Replace names the subject (a level or a named binary) to move to and, optionally, which
// members (default: all, in order).
type Replace struct {
	Version string   `json:"version"`
	Members []string `json:"members,omitempty"`
}

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

// StepKind is what a step does; its string is the step's key in a YAML plan and its name in
// logs, traces and reports.
type StepKind string

// The step kinds.
const (
	KindReplace   StepKind = "replace"
	KindDowngrade StepKind = "downgrade"
	KindExpect    StepKind = "expect"
	KindKill      StepKind = "kill"
	KindRestart   StepKind = "restart"
	KindPause     StepKind = "pause"
)

// Kind is what the step does ("" for a step that sets nothing).
func (s Step) Kind() StepKind {
	switch {
	case s.Replace != nil:
		return KindReplace
	case s.Downgrade != nil:
		return KindDowngrade
	case s.Expect != nil:
		return KindExpect
	case s.Kill != "":
		return KindKill
	case s.Restart != "":
		return KindRestart
	case s.Pause > 0:
		return KindPause
	}
	return ""
}

// String is a one-line description of the step.
func (s Step) String() string {
	switch s.Kind() {
	case KindReplace:
		who := "every member"
		if len(s.Replace.Members) > 0 {
			who = strings.Join(s.Replace.Members, ",")
		}
		return fmt.Sprintf("replace %s with %s", who, s.Replace.Version)
	case KindDowngrade:
		return fmt.Sprintf("downgrade %s %s", s.Downgrade.Action, s.Downgrade.Version)
	case KindExpect:
		var parts []string
		e := s.Expect
		for _, kv := range [][2]string{{"cluster", e.Cluster}, {"storage", e.Storage}, {"server", e.Server}, {"log", e.Log}} {
			if kv[1] != "" {
				parts = append(parts, fmt.Sprintf("%s=%q", kv[0], kv[1]))
			}
		}
		return "expect " + strings.Join(parts, " ")
	case KindKill:
		return "kill " + s.Kill
	case KindRestart:
		return "restart " + s.Restart
	case KindPause:
		return "pause " + time.Duration(s.Pause).String()
	}
	return "?"
}

var (
	level = regexp.MustCompile(`^3\.[0-9]+$`)
	// subject is a level or a named binary such as upstream-3.5.17.
	subject = regexp.MustCompile(`^(3\.[0-9]+|[a-z][a-z0-9.-]*)$`)
)

// Validate checks the plan for a cluster of members (names m1..mN).
func (p *Plan) Validate() error {
	if p.Name == "" {
		return errors.New("plan has no name")
	}
	if p.Members < 1 || p.Members > 7 {
		return fmt.Errorf("plan %s: members must be 1 to 7, got %d", p.Name, p.Members)
	}
	if !subject.MatchString(p.Start) {
		return fmt.Errorf("plan %s: start %q is not a level like 3.5 or a binary's name like upstream-3.5.17", p.Name, p.Start)
	}
	if len(p.Steps) == 0 {
		return fmt.Errorf("plan %s: no steps", p.Name)
	}
	checkMember := func(name string) error {
		var n int
		if _, err := fmt.Sscanf(name, "m%d", &n); err != nil || n < 1 || n > p.Members || name != fmt.Sprintf("m%d", n) {
			return fmt.Errorf("no member %q (members are m1..m%d)", name, p.Members)
		}
		return nil
	}
	for i, s := range p.Steps {
		where := fmt.Sprintf("plan %s: step %d", p.Name, i+1)
		set := 0
		for _, b := range []bool{s.Replace != nil, s.Downgrade != nil, s.Expect != nil, s.Kill != "", s.Restart != "", s.Pause > 0} {
			if b {
				set++
			}
		}
		if set != 1 {
			return fmt.Errorf("%s: a step must be exactly one of replace, downgrade, expect, kill, restart or pause", where)
		}
		var err error
		switch s.Kind() {
		case KindReplace:
			if !subject.MatchString(s.Replace.Version) {
				err = fmt.Errorf("replace: version %q is not a level like 3.6 or a binary's name like upstream-3.5.17", s.Replace.Version)
			}
			for _, m := range s.Replace.Members {
				if err == nil {
					err = checkMember(m)
				}
			}
		case KindDowngrade:
			switch s.Downgrade.Action {
			case "validate", "enable", "cancel":
			default:
				err = fmt.Errorf("downgrade: action %q must be validate, enable or cancel", s.Downgrade.Action)
			}
			if err == nil && s.Downgrade.Action != "cancel" && !level.MatchString(s.Downgrade.Version) {
				err = fmt.Errorf("downgrade: version %q is not a level like 3.5", s.Downgrade.Version)
			}
		case KindExpect:
			e := s.Expect
			if e.Cluster == "" && e.Storage == "" && e.Server == "" && e.Log == "" {
				err = errors.New("expect: nothing to expect (cluster, storage, server or log)")
			}
			for _, v := range []string{e.Cluster, e.Storage, e.Server} {
				if err == nil && v != "" && !level.MatchString(v) {
					err = fmt.Errorf("expect: %q is not a level like 3.6", v)
				}
			}
		case KindKill:
			err = checkMember(s.Kill)
		case KindRestart:
			err = checkMember(s.Restart)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

// Subjects are the binaries the plan needs: levels and named binaries.
func (p *Plan) Subjects() []string {
	seen := map[string]bool{p.Start: true}
	for _, s := range p.Steps {
		if s.Replace != nil {
			seen[s.Replace.Version] = true
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
