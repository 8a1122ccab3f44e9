package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// spanNames reads the OpenTelemetry spans (one JSON object each) from a trace file.
func spanNames(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]int{}
	dec := json.NewDecoder(f)
	for dec.More() {
		var span struct{ Name string }
		if err := dec.Decode(&span); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		names[span.Name]++
	}
	return names
}

func TestUpgradeLabRunsEveryBuiltinPlan(t *testing.T) {
	work := t.TempDir()
	binDir := filepath.Dir(Binary(t, "etcd"))
	Binary(t, "etcd-last-release")
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
	for _, want := range []string{"upgrade", "downgrade", "downgrade-cancel", "upgrade-with-crash"} {
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
	if names["replace member"] < 9 {
		t.Errorf("%d member replacements traced, want at least 9 (3 plans swap 3 members)", names["replace member"])
	}
}

func TestUpgradeLabReportsFailuresAndRefusesBadInput(t *testing.T) {
	work := t.TempDir()
	binDir := filepath.Dir(Binary(t, "etcd"))
	Binary(t, "etcd-last-release")
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
		{[]string{"--plan", "upgrade", "--binary", "3.5=" + Binary(t, "etcd")}, "that binary is level 3.6"},
		{[]string{"--plan", "upgrade", "--bin-dir", t.TempDir()}, "no etcd binary for 3.5, 3.6"},
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

// The lab takes subjects from both implementations in one plan: upstream 3.5.17 upgraded to
// ours and back, and upstream 3.6.16 members mixed into a cluster of ours.
func TestUpgradeLabMixesImplementations(t *testing.T) {
	work := t.TempDir()
	ours := Binary(t, "etcd")
	UpstreamBinaryAt(t, UpstreamVersion, "etcd")
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--workdir", work,
		"--plan", "../upgradelab/plan/examples/upstream-roundtrip.yaml", "--plan", "../upgradelab/plan/examples/mixed-3.6.yaml",
		"--binary", "3.6="+ours,
		"--binary", "upstream-3.5.17="+UpstreamBinaryAt(t, Upstream35Version, "etcd"))
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
	work := t.TempDir()
	binDir := filepath.Dir(Binary(t, "etcd"))
	Binary(t, "etcd-last-release")
	p := filepath.Join(work, "refuse.yaml")
	os.WriteFile(p, []byte(`name: refusals
members: 3
start: "3.6"
steps:
  - refuse: {member: m1, version: "3.5", error: "has storage version 3.6, newer than this etcd 3.5.0"}
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
