package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func writeMatrix(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ci", "matrix.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadMatrix(t *testing.T) {
	p := writeMatrix(t, `
subjects:
  ours: {"3.5": ../bin/etcd-last-release, "3.6": /opt/etcd}
  upstream: {"3.5": upstream-3.5.35, "3.6": upstream-3.6.16}
plans: [upgrade, plans/faults.yaml]
members: [3, 5]
generate: {from: "3.5", to: "3.6", faults: [kill, freeze], seeds: [7, 8]}
`)
	m, err := LoadMatrix(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(p)
	if got := m.Subjects["ours"]["3.5"]; got != filepath.Join(dir, "../bin/etcd-last-release") {
		t.Errorf("relative binary path = %s", got)
	}
	if m.Subjects["ours"]["3.6"] != "/opt/etcd" || m.Subjects["upstream"]["3.6"] != "upstream-3.6.16" {
		t.Errorf("subjects = %v", m.Subjects)
	}
	if m.Plans[0] != "upgrade" || m.Plans[1] != filepath.Join(dir, "plans/faults.yaml") {
		t.Errorf("plans = %v", m.Plans)
	}
	if s := m.Sets(); strings.Join(s, ",") != "ours,upstream" {
		t.Errorf("sets = %v", s)
	}
	lv := m.levels("upstream", nil)
	if lv["3.5"] != "3.5" || lv["3.6"] != "3.6" {
		t.Errorf("levels = %v", lv)
	}

	// Generated plans: one per seed, the same plan for the same seed every time.
	m.Plans = nil
	a, err := m.plans(lv)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.plans(lv)
	if len(a) != 2 || a[0].Seed != 7 || a[1].Seed != 8 {
		t.Fatalf("generated %d plans", len(a))
	}
	for i := range a {
		ya, _ := yaml.Marshal(a[i])
		yb, _ := yaml.Marshal(b[i])
		if string(ya) != string(yb) {
			t.Fatalf("seed %d gave two plans:\n%s\n%s", a[i].Seed, ya, yb)
		}
	}
	if a[0].Numbered() == a[1].Numbered() {
		t.Error("two seeds gave the same plan")
	}
}

func TestLoadMatrixRefusals(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`plans: [upgrade]`, "no subject sets"},
		{"subjects: {ours: {}}\nplans: [upgrade]", `subject set "ours" is empty`},
		{`subjects: {ours: {"3.5": x}}`, "no plans and nothing to generate"},
		{"subjects: {ours: {\"3.5\": x}}\nplans: [upgrade]\nsizes: [3]", "unknown field"},
		{"subjects: {ours: {\"3.5\": x}}\nplans: [upgrade]\nmembers: [0]", "members 0"},
		{"subjects: {ours: {\"3.5\": x}}\ngenerate: {from: \"3.5\", to: \"3.6\"}", "needs from, to and seeds"},
		{"subjects: {ours: {\"3.5\": x}}\ngenerate: {from: \"3.5\", to: \"3.6\", seeds: [0]}", "seed 0"},
	} {
		_, err := LoadMatrix(writeMatrix(t, tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.text, err, tc.want)
		}
	}
	if _, err := LoadMatrix(filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("a missing file was accepted")
	}
}

// The matrix shipped as an example loads, and every plan in it is valid at its sizes.
func TestExampleMatrixIsValid(t *testing.T) {
	m, err := LoadMatrix("../matrix/ours-vs-upstream.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := m.plans(m.levels("upstream", nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 6 || len(m.Sets()) != 2 { // upgrade, downgrade, three-generations, faults, two seeded 3.6 -> 3.7
		t.Fatalf("%d plans, %d sets", len(plans), len(m.Sets()))
	}
	for _, p := range plans {
		for _, n := range m.Members {
			sized := *p
			sized.Members = n
			if err := sized.Validate(); err != nil {
				t.Errorf("plan %s at %d members: %v", p.Name, n, err)
			}
		}
	}
}
