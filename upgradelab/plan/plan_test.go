package plan

import (
	"strings"
	"testing"
	"time"
)

func TestBuiltinPlansParse(t *testing.T) {
	plans, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range plans {
		names[p.Name] = true
		if p.Description == "" {
			t.Errorf("plan %s has no description", p.Name)
		}
	}
	for _, want := range []string{"upgrade", "downgrade", "downgrade-cancel", "upgrade-with-crash", "three-generations"} {
		if !names[want] {
			t.Errorf("built-in plan %s missing (have %v)", want, names)
		}
	}
	p, err := Load("downgrade")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Subjects(), ","); got != "3.5,3.6" {
		t.Errorf("downgrade needs levels %s, want 3.5,3.6", got)
	}
	if p, err = Load("three-generations"); err != nil || strings.Join(p.Subjects(), ",") != "3.5,3.6,3.7" || p.Validate() != nil {
		t.Errorf("three-generations: %v, levels %v", err, p.Subjects())
	}
}

func TestPlansAreValidated(t *testing.T) {
	base := "name: x\nmembers: 3\nstart: \"3.5\"\nsteps:\n"
	cases := map[string]string{
		"  - replace: {version: \"3.6\"}\n    wait: 1s\n":                    "exactly one of",
		"  - replace: {version: \"4\"}\n":                                    "is not a level like 3.6, a version like 3.5.35",
		"  - replace: {version: \"3.6\", members: [m4]}\n":                   `no member "m4" (members here are m1, m2, m3 or leader)`,
		"  - kill: boss\n":                                                   `no member "boss" (members here are m1, m2, m3 or leader, follower)`,
		"  - restart: leader\n":                                              `no member "leader" (members here are m1, m2, m3 or all)`,
		"  - heal: follower\n":                                               `or all)`,
		"  - promote: all\n":                                                 `no member "all"`,
		"  - downgrade: {action: rollback, version: \"3.5\"}\n":              "must be validate, enable or cancel",
		"  - expect: {}\n":                                                   "nothing to expect",
		"  - expect: {cluster: three}\n":                                     "is not a level",
		"  - explode: true\n":                                                "unknown field",
		"  - crash: {member: m1, at: \"raft before save\"}\n":                "is not a failpoint name",
		"  - crash: {member: all, at: raftBeforeSave}\n":                     `no member "all"`,
		"  - pause: 1s\n":                                                    "unknown field", // renamed to wait
		"  - wait: soon\n":                                                   "duration",
		"  - remove: m2\n  - kill: m2\n":                                     `step 2: no member "m2" (members here are m1, m3`,
		"  - add: {version: \"3.6\"}\n  - promote: m5\n":                     `no member "m5" (members here are m1, m2, m3, m4)`,
		"  - refuse: {member: m1, version: \"3.7\"}\n":                       "give the error text",
		"  - refuse: {member: m1, join: true, version: \"3.7\", error: x}\n": "either member",
		"  - refuse: {version: \"3.7\", error: x}\n":                         "either member",
		"  - wait: 1s\n    maxStall: -1s\n":                                  "must not be negative",
	}
	for steps, want := range cases {
		_, err := Parse([]byte(base + steps))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("steps %q: error %v, want %q", steps, err, want)
		}
	}
	if _, err := Parse([]byte("name: x\nmembers: 0\nstart: \"3.5\"\nsteps:\n  - wait: 1s\n")); err == nil {
		t.Error("zero members accepted")
	}
	if _, err := Load("no-such-plan"); err == nil || !strings.Contains(err.Error(), "built-in: ") {
		t.Errorf("unknown plan: %v", err)
	}
}

// TestEveryStepKindParses reads a plan with one step of each kind, the membership changing
// under it, and checks kinds, targets and the needed subjects.
func TestEveryStepKindParses(t *testing.T) {
	p, err := Parse([]byte(`name: all-kinds
members: 3
start: "3.5.35"
thresholds: {maxStall: 2s, maxFailed: 10}
steps:
  - replace: {version: "3.6", members: [m1]}
  - downgrade: {action: cancel}
  - expect: {cluster: "3.5"}
  - kill: leader
  - restart: all
  - partition: follower
  - heal: all
  - freeze: m2
  - thaw: m2
  - wait: 1s
  - add: {version: upstream-3.6.16, learner: true}
  - promote: m4
  - remove: m4
  - compact: {physical: true}
  - defrag: all
  - refuse: {member: m1, version: "3.7", error: "cluster cannot be downgraded"}
    maxStall: 10s
  - crash: {member: follower, at: raftBeforeSave}
  - snapshot: {maxEntries: 20000}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != len(Kinds) {
		t.Fatalf("%d steps for %d kinds", len(p.Steps), len(Kinds))
	}
	for i, s := range p.Steps {
		if s.Kind() != Kinds[i] {
			t.Errorf("step %d is %q, want %q", i+1, s.Kind(), Kinds[i])
		}
		if strings.Contains(s.String(), "?") {
			t.Errorf("step %d prints as %q", i+1, s)
		}
	}
	if got := strings.Join(p.Subjects(), ","); got != "3.5.35,3.6,3.7,upstream-3.6.16" {
		t.Errorf("subjects %s", got)
	}
	if p.Thresholds.MaxStall != Duration(2*time.Second) || p.Steps[15].MaxStall != Duration(10*time.Second) {
		t.Errorf("thresholds %+v, step 16 maxStall %v", p.Thresholds, p.Steps[15].MaxStall)
	}
	if !strings.Contains(p.Numbered(), " 13. remove m4\n") {
		t.Errorf("numbered plan:\n%s", p.Numbered())
	}
}
