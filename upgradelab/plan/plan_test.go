package plan

import (
	"strings"
	"testing"
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
	for _, want := range []string{"upgrade", "downgrade", "downgrade-cancel", "upgrade-with-crash"} {
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
}

func TestPlansAreValidated(t *testing.T) {
	base := "name: x\nmembers: 3\nstart: \"3.5\"\nsteps:\n"
	cases := map[string]string{
		"  - replace: {version: \"3.6\"}\n    pause: 1s\n":      "exactly one of",
		"  - replace: {version: \"4\"}\n":                       "is not a level",
		"  - replace: {version: \"3.6\", members: [m4]}\n":      `no member "m4"`,
		"  - kill: leader\n":                                    `no member "leader"`,
		"  - downgrade: {action: rollback, version: \"3.5\"}\n": "must be validate, enable or cancel",
		"  - expect: {}\n":                                      "nothing to expect",
		"  - expect: {cluster: three}\n":                        "is not a level",
		"  - explode: true\n":                                   "unknown field",
		"  - pause: soon\n":                                     "duration",
	}
	for steps, want := range cases {
		_, err := Parse([]byte(base + steps))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("steps %q: error %v, want %q", steps, err, want)
		}
	}
	if _, err := Parse([]byte("name: x\nmembers: 0\nstart: \"3.5\"\nsteps:\n  - pause: 1s\n")); err == nil {
		t.Error("zero members accepted")
	}
	if _, err := Load("no-such-plan"); err == nil || !strings.Contains(err.Error(), "built-in: ") {
		t.Errorf("unknown plan: %v", err)
	}
}
