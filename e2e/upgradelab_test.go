package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etcdx/upgradelab/traces"
)

// labReport is the part of upgradelab's report the tests read.
type labReport struct {
	Plan          string                     `json:"plan"`
	Members       int                        `json:"members"`
	Passed        bool                       `json:"passed"`
	Failure       string                     `json:"failure"`
	Writes        int                        `json:"writes"`
	AckedWrites   int                        `json:"ackedWrites"`
	LostWrites    []string                   `json:"lostWrites"`
	HistoryOps    int                        `json:"historyOps"`
	Linearizable  string                     `json:"linearizable"`
	FinalVersions map[string]json.RawMessage `json:"finalVersions"`
	Auth          string                     `json:"auth"`
}

func readLabReport(t *testing.T, path string) []labReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var reps []labReport
	if err := json.Unmarshal(b, &reps); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return reps
}

// spanNames reads an OTLP JSON trace file and counts its spans by name, and by
// "service/instance/name" for spans of a service instance (the members').
func spanNames(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := traces.UnmarshalJSON(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	names := map[string]int{}
	for _, r := range rs {
		attrs := map[string]string{}
		for _, kv := range r.GetResource().GetAttributes() {
			attrs[kv.Key] = kv.GetValue().GetStringValue()
		}
		for _, ss := range r.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				names[sp.GetName()]++
				if id := attrs["service.instance.id"]; id != "" {
					names[attrs["service.name"]+"/"+id+"/"+sp.GetName()]++
				}
			}
		}
	}
	return names
}

func TestUpgradeLabRunsEveryBuiltinPlan(t *testing.T) {
	t.Parallel() // judges nothing by time; concurrent lab runs keep apart (own ports, workdirs)
	work := t.TempDir()
	binDir := filepath.Dir(Binary(t, "etcd"))
	ServerAt(t, OldestLevel)
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--plan", "all", "--bin-dir", binDir, "--workdir", work)
	if code != 0 {
		t.Fatalf("upgradelab run: exit %d\n%s", code, out)
	}
	reps := readLabReport(t, filepath.Join(work, "report.json"))
	plans := map[string]bool{}
	for _, r := range reps {
		plans[r.Plan] = true
		if !r.Passed || len(r.LostWrites) != 0 || r.Linearizable != "Ok" || r.AckedWrites < 100 || r.HistoryOps < 100 {
			t.Errorf("run %s/%d: %+v", r.Plan, r.Members, r)
		}
		if len(r.FinalVersions) != r.Members {
			t.Errorf("run %s: final versions of %d members, want %d", r.Plan, len(r.FinalVersions), r.Members)
		}
	}
	for _, want := range []string{"upgrade", "downgrade", "downgrade-cancel", "upgrade-with-crash", "three-generations"} {
		if !plans[want] {
			t.Errorf("plan %s did not run; output:\n%s", want, out)
		}
	}
	names := spanNames(t, filepath.Join(work, "trace.json"))
	for _, want := range []string{"run upgrade", "run downgrade", "start cluster", "replace member", "downgrade", "expect", "kill", "restart", "check"} {
		if names[want] == 0 {
			t.Errorf("no %q span in the trace (have %v)", want, names)
		}
	}
	// The check step's requests are traced through the members (W3C context sent along).
	if names["etcdserverpb.Maintenance/HashKV"] < 2 || names["etcd/m1/etcdserverpb.Maintenance/HashKV"] == 0 {
		t.Errorf("no member spans of the check's requests (have %v)", names)
	}
	if names["replace member"] < 9 {
		t.Errorf("%d member replacements traced, want at least 9 (3 plans swap 3 members)", names["replace member"])
	}
}

func TestUpgradeLabReportsFailuresAndRefusesBadInput(t *testing.T) {
	t.Parallel() // judges nothing by time; concurrent lab runs keep apart (own ports, workdirs)
	work := t.TempDir()
	binDir := filepath.Dir(Binary(t, "etcd"))
	ServerAt(t, OldestLevel)
	wrong := filepath.Join(work, "wrong.yaml")
	os.WriteFile(wrong, []byte(`name: wrong-expectation
description: upgrades, then expects a level nothing reaches
members: 3
start: "3.5"
steps:
  - replace: {version: "3.6"}
  - expect: {cluster: "3.7", timeout: 3s}
`), 0o644)
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--plan", wrong, "--members", "1", "--bin-dir", binDir, "--workdir", work)
	if code != 1 || !strings.Contains(out, "FAIL wrong-expectation/1") || !strings.Contains(out, "cluster version is 3.6, want 3.7") {
		t.Fatalf("a failing plan: exit %d\n%s", code, out)
	}
	reps := readLabReport(t, filepath.Join(work, "report.json"))
	if len(reps) != 1 || reps[0].Passed || !strings.Contains(reps[0].Failure, "step 2") || reps[0].Members != 1 {
		t.Fatalf("report of the failing run: %+v", reps)
	}

	partition := filepath.Join(work, "partition.yaml")
	os.WriteFile(partition, []byte("name: cut\nmembers: 3\nstart: \"3.6\"\nsteps:\n  - partition: leader\n"), 0o644)
	bad := filepath.Join(work, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nmembers: 3\nstart: \"3.5\"\nsteps:\n  - upgrade: everything\n"), 0o644)
	usage := []struct {
		args []string
		want string
	}{
		{[]string{"--plan", "no-such-plan"}, `no built-in plan "no-such-plan"`},
		{[]string{"--plan", bad}, "unknown field"},
		{[]string{"--shard", "3/2"}, `--shard "3/2": want I/N`},
		{[]string{"--plan", "upgrade", "--binary", "3.6=" + Binary(t, "etcd")}, "that binary is level 3.7"},
		{[]string{"--plan", "upgrade", "--bin-dir", t.TempDir()}, "no etcd binary for 3.6, 3.7"},
		{[]string{"--clients", "many"}, "--clients"},
		{[]string{"--runtime", "vm"}, `--runtime "vm"`},
		{[]string{"--runtime", "process", "--plan", partition}, "the process runtime cannot partition a member"},
	}
	// A cell that cannot run (a plan naming m2 at one member) is reported as skipped, not
	// fatal; --shard 1/2 of two cells keeps the first only.
	code, out = runTool(t, "upgradelab", "run", "--runtime", "process", "--bin-dir", binDir, "--workdir", t.TempDir(),
		"--plan", "upgrade-with-crash,upgrade", "--members", "1", "--shard", "1/2")
	if code != 0 || !strings.Contains(out, `SKIP upgrade-with-crash/1: cannot run at 1 members: plan upgrade-with-crash: step 2: no member "m2"`) ||
		!strings.Contains(out, "0 of 0 runs passed, 1 skipped") || strings.Contains(out, "=== upgrade,") {
		t.Errorf("a skipped cell in shard 1/2: exit %d\n%s", code, out)
	}
	for _, u := range usage {
		args := append([]string{"run", "--bin-dir", binDir, "--workdir", work}, u.args...)
		if code, out := runTool(t, "upgradelab", args...); code != 2 || !strings.Contains(out, u.want) {
			t.Errorf("upgradelab %v: exit %d, want 2 with %q\n%s", u.args, code, u.want, out)
		}
	}
}

// The lab takes subjects from both implementations in one plan: upstream 3.5.35 upgraded to
// ours and back, and upstream 3.6.16 members mixed into a cluster of ours.
func TestUpgradeLabMixesImplementations(t *testing.T) {
	t.Parallel() // judges nothing by time; concurrent lab runs keep apart (own ports, workdirs)
	work := t.TempDir()
	ours := ServerAt(t, LastReleaseLevel)
	UpstreamBinaryAt(t, Upstream36Version, "etcd")
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--workdir", work,
		"--plan", "../upgradelab/plan/examples/upstream-roundtrip.yaml", "--plan", "../upgradelab/plan/examples/mixed-3.6.yaml",
		"--binary", "3.6="+ours,
		"--binary", "upstream-3.5.35="+UpstreamBinaryAt(t, Upstream35Version, "etcd"))
	// upstream-3.6.16 is given by no --binary: the lab builds it from the module proxy (the
	// build is shared with UpstreamBinaryAt, so here it finds it built).
	if code != 0 || !strings.Contains(out, "upstream etcd v3.6.16: building from the Go module proxy, or taken from") {
		t.Fatalf("upgradelab run: exit %d\n%s", code, out)
	}
	reps := readLabReport(t, filepath.Join(work, "report.json"))
	plans := map[string]bool{}
	for _, r := range reps {
		plans[r.Plan] = true
		if !r.Passed || len(r.LostWrites) != 0 || r.Linearizable != "Ok" || r.AckedWrites < 100 {
			t.Errorf("run %s/%d: %+v", r.Plan, r.Members, r)
		}
	}
	if !plans["upstream-roundtrip"] || !plans["mixed-3.6"] {
		t.Fatalf("not every plan ran:\n%s", out)
	}
}

// TestUpgradeLabProvesRefusals: a 3.5 binary on a 3.6 member's data and a 3.5 joiner of a 3.6
// cluster must both be refused with their texts; the cluster is put back and the run passes.
// A refusal with another text fails the run.
func TestUpgradeLabProvesRefusals(t *testing.T) {
	t.Parallel() // judges nothing by time; concurrent lab runs keep apart (own ports, workdirs)
	work := t.TempDir()
	binDir := filepath.Dir(Binary(t, "etcd"))
	ServerAt(t, OldestLevel)
	p := filepath.Join(work, "refuse.yaml")
	os.WriteFile(p, []byte(`name: refusals
members: 3
start: "3.6"
steps:
  - refuse: {member: m1, version: "3.5", error: "has storage version 3.6, newer than this etcd 3.5.35"}
  - refuse: {join: true, version: "3.5", error: "cannot join the cluster: etcd 3.5 is older than the cluster version 3.6"}
  - expect: {cluster: "3.6", server: "3.6"}
`), 0o644)
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--plan", p, "--bin-dir", binDir, "--workdir", work)
	if code != 0 || !strings.Contains(out, "PASS refusals/3") {
		t.Fatalf("refusals: exit %d\n%s", code, out)
	}
	wrong := filepath.Join(work, "wrong.yaml")
	os.WriteFile(wrong, []byte("name: wrong-refusal\nmembers: 1\nstart: \"3.6\"\nsteps:\n  - refuse: {member: m1, version: \"3.5\", error: \"no such text\"}\n"), 0o644)
	code, out = runTool(t, "upgradelab", "run", "--runtime", "process", "--plan", wrong, "--bin-dir", binDir, "--workdir", work)
	if code != 1 || !strings.Contains(out, `member m1 at 3.5 exited without logging "no such text"`) {
		t.Fatalf("a refusal with another text: exit %d\n%s", code, out)
	}
}

// TestUpgradeLabMatrixSideBySide: a matrix file runs the same plans against our binaries and
// upstream's; a cell too big for its size is skipped; a seeded plan is the one a dry run of the
// same seed prints; the summary page puts both subject sets side by side and links each run's
// page; each run's trace holds the lab's spans and its members' (upstream's included, started
// with the flags its release spells); JUnit names the sets.
func TestUpgradeLabMatrixSideBySide(t *testing.T) {
	t.Parallel() // judges nothing by time; concurrent lab runs keep apart (own ports, workdirs)
	work := t.TempDir()
	binDir := filepath.Dir(Binary(t, "etcd"))
	ServerAt(t, OldestLevel)
	UpstreamBinaryAt(t, Upstream36Version, "etcd")
	UpstreamBinaryAt(t, Upstream35Version, "etcd")
	UpstreamBinaryAt(t, Upstream37Version, "etcd")
	matrix := filepath.Join(work, "matrix.yaml")
	// The built-in upgrade plan is today's path, 3.6 -> 3.7; the generated one goes 3.5 -> 3.6.
	os.WriteFile(matrix, []byte(`subjects:
  ours: {"3.5": "3.5", "3.6": "3.6", "3.7": "3.7"}
  upstream: {"3.5": upstream-3.5.35, "3.6": upstream-3.6.16, "3.7": upstream-3.7.3}
plans: [upgrade, upgrade-with-crash]
members: [1]
generate: {from: "3.5", to: "3.6", faults: [compact, kill], faultRate: 1, seeds: [5], members: 1}
`), 0o644)
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--matrix", matrix, "--bin-dir", binDir,
		"--workdir", filepath.Join(work, "out"), "--trace-sampling", "0.05")
	if code != 0 {
		t.Fatalf("upgradelab run --matrix: exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"=== upgrade, 1 members, from 3.6 (ours)", "=== upgrade, 1 members, from 3.6 (upstream)",
		"SKIP upgrade-with-crash/1 (ours): cannot run at 1 members", "SKIP upgrade-with-crash/1 (upstream)",
		"PASS random-5/1 (ours)", "PASS random-5/1 (upstream)", "4 of 4 runs passed, 2 skipped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	// The seeded plan that ran is the one a dry run of the same seed prints.
	code, dry := runTool(t, "upgradelab", "plan", "--dry-run", "--seed", "5", "--from", "3.5", "--to", "3.6",
		"--faults", "compact,kill", "--fault-rate", "1", "--members", "1")
	numbered, _, _ := strings.Cut(dry, "\n\n")
	if code != 0 || !strings.Contains(numbered, "3.") || strings.Count(out, strings.TrimSpace(numbered)) != 2 {
		t.Errorf("the seeded plan that ran is not the dry run's (exit %d):\n%s\n--- run:\n%s", code, numbered, out)
	}

	var reps []struct {
		Plan, Subjects, Dir, Trace string
		Passed                     bool
		Skipped                    string
		TraceSpans                 int
	}
	b, _ := os.ReadFile(filepath.Join(work, "out", "report.json"))
	if err := json.Unmarshal(b, &reps); err != nil || len(reps) != 6 {
		t.Fatalf("report: %v, %d runs", err, len(reps))
	}
	page, _ := os.ReadFile(filepath.Join(work, "out", "report.html"))
	if !strings.Contains(string(page), "<th>ours</th><th>upstream</th>") {
		t.Errorf("the summary page does not set ours and upstream side by side:\n%s", page)
	}
	for _, r := range reps {
		if r.Skipped != "" {
			continue
		}
		rel, _ := filepath.Rel(filepath.Join(work, "out"), r.Dir)
		if !strings.Contains(string(page), `href="`+rel+`/report.html"`) {
			t.Errorf("the summary does not link %s", rel)
		}
		if p, err := os.ReadFile(filepath.Join(r.Dir, "report.html")); err != nil || !strings.Contains(string(p), `class="lane">m1<`) {
			t.Errorf("run %s/%s: no page with m1's lane: %v", r.Subjects, r.Plan, err)
		}
		names := spanNames(t, r.Trace)
		if names["run "+r.Plan] != 1 || names["etcd/m1/etcdserverpb.Maintenance/HashKV"] == 0 || r.TraceSpans < 10 {
			t.Errorf("run %s/%s: trace of %d spans lacks the lab's run or m1's spans: %v", r.Subjects, r.Plan, r.TraceSpans, names)
		}
	}
	all := spanNames(t, filepath.Join(work, "out", "trace.json"))
	if all["run upgrade"] != 2 || all["run random-5"] != 2 {
		t.Errorf("the merged trace lacks runs: %v", all)
	}
	junit, _ := os.ReadFile(filepath.Join(work, "out", "junit.xml"))
	if !strings.Contains(string(junit), `name="upgrade/1 members/ours:`) || !strings.Contains(string(junit), `name="upgrade/1 members/upstream:`) {
		t.Errorf("JUnit does not name the subject sets:\n%s", junit)
	}
}

// With authentication on, the upgrade from 3.5 and the downgrade back keep users, roles and
// permissions: our binaries at both levels, and upstream 3.5.35 upgraded to ours and back.
func TestUpgradeLabAuthRoundTrip(t *testing.T) {
	t.Parallel() // judges nothing by time; concurrent lab runs keep apart (own ports, workdirs)
	for name, binaries := range map[string][]string{
		"ours":            {"--bin-dir", filepath.Dir(Binary(t, "etcd"))},
		"upstream-3.5.35": {"--binary", "3.5=" + UpstreamBinaryAt(t, Upstream35Version, "etcd"), "--binary", "3.6=" + ServerAt(t, LastReleaseLevel)},
	} {
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			args := append([]string{"run", "--runtime", "process", "--workdir", work,
				"--plan", "../upgradelab/plan/examples/auth-roundtrip.yaml"}, binaries...)
			code, out := runTool(t, "upgradelab", args...)
			if code != 0 || !strings.Contains(out, "auth on: root and upgradelab-user") {
				t.Fatalf("upgradelab run: exit %d\n%s", code, out)
			}
			reps := readLabReport(t, filepath.Join(work, "report.json"))
			if len(reps) != 1 || !reps[0].Passed || !strings.Contains(reps[0].Auth, "users, roles and permissions intact") ||
				len(reps[0].LostWrites) != 0 || reps[0].Linearizable != "Ok" {
				t.Fatalf("report: %+v\n%s", reps, out)
			}
			html, err := os.ReadFile(filepath.Join(work, "report.html"))
			if err != nil || !strings.Contains(string(html), "auth-roundtrip") {
				t.Errorf("summary page: %v", err)
			}
		})
	}
}
