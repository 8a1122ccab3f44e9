package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"etcdx/upgradelab/netns"
)

// labResources lists the containers, networks and volumes lab runs created that still exist,
// by the label the lab puts on everything.
func labResources(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, kind := range [][]string{
		{"ps", "-a", "--format", "container {{.Names}}"},
		{"network", "ls", "--format", "network {{.Name}}"},
		{"volume", "ls", "--format", "volume {{.Name}}"},
	} {
		args := append([]string{kind[0]}, kind[1:len(kind)-2]...)
		args = append(args, "--filter", "label=etcdx.upgradelab.owner", kind[len(kind)-2], kind[len(kind)-1])
		b, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, b)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// requireDocker stops a container test where no engine answers, saying so: these tests prove
// the container runtime, and only an engine can.
func requireDocker(t *testing.T) {
	t.Helper()
	if b, err := exec.Command("docker", "version", "--format", "{{.Server.APIVersion}}").CombinedOutput(); err != nil {
		t.Fatalf("the container runtime's tests need a Docker engine; none answers: %v\n%s", err, b)
	}
}

// faultsPlan upgrades under every fault the container runtime offers and changes membership
// in the mixed-version phase.
const faultsPlan = `name: container-faults
description: a rolling replace under partitions, freezes, kill -9 and membership changes
members: 3
start: "%START%"
steps:
  - replace: {version: "%TO%", members: [m1]}
  - partition: leader
  - wait: 2s
  - heal: all
  - freeze: follower
  - wait: 1s
  - thaw: all
  - kill: follower
  - restart: all
  - add: {version: "%TO%", learner: true}
  - promote: m4
  - remove: m4
  - compact: {physical: true}
  - defrag: all
  - replace: {version: "%TO%", members: [m2, m3]}
  - expect: {cluster: "3.6", storage: "3.6", server: "3.6"}
`

type labRun struct {
	Plan      string    `json:"plan"`
	Passed    bool      `json:"passed"`
	Failure   string    `json:"failure"`
	Runtime   string    `json:"runtime"`
	StartedAt time.Time `json:"startedAt"`
	Binaries  map[string]struct {
		Path, Version, SHA256 string
	} `json:"binaries"`
	LostWrites   []string `json:"lostWrites"`
	Linearizable string   `json:"linearizable"`
	Steps        []struct {
		Step, Kind, Detail, Error string
		Availability              struct {
			Requests     int   `json:"requests"`
			LongestStall int64 `json:"longestStallNs"`
		} `json:"availability"`
	} `json:"steps"`
}

func readLabRuns(t *testing.T, path string) []labRun {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var runs []labRun
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return runs
}

// TestUpgradeLabContainerFaults runs the faults plan in containers, once on our binaries
// (3.5 to 3.6) and once on upstream etcd (3.5.35 to 3.6.16), and leaves nothing behind.
func TestUpgradeLabContainerFaults(t *testing.T) {
	requireDocker(t)
	work := t.TempDir()
	ours := filepath.Join(work, "ours.yaml")
	theirs := filepath.Join(work, "upstream.yaml")
	os.WriteFile(ours, []byte(strings.NewReplacer("%START%", "3.5", "%TO%", "3.6", "container-faults", "container-faults-ours").Replace(faultsPlan)), 0o644)
	os.WriteFile(theirs, []byte(strings.NewReplacer("%START%", Upstream35Version[1:], "%TO%", Upstream36Version[1:], "container-faults", "container-faults-upstream").Replace(faultsPlan)), 0o644)
	code, out := runTool(t, "upgradelab", "run", "--runtime", "container", "--workdir", work,
		"--plan", ours, "--plan", theirs,
		"--binary", "3.6="+ServerAt(t, LastReleaseLevel), "--binary", "3.5="+ServerAt(t, OldestLevel),
		"--binary", Upstream35Version[1:]+"="+UpstreamBinaryAt(t, Upstream35Version, "etcd"),
		"--binary", Upstream36Version[1:]+"="+UpstreamBinaryAt(t, Upstream36Version, "etcd"))
	t.Logf("upgradelab:\n%s", out)
	if code != 0 {
		t.Fatalf("upgradelab run: exit %d", code)
	}
	checkFaultRuns(t, filepath.Join(work, "report.json"), 2, "container")
	if left := labResources(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// checkFaultRuns reads the lab's report of faults-plan runs: n runs in runtime, each passed
// with no lost write and a linearizable history, with each step's choice and the stall the
// partition of the leader caused.
func checkFaultRuns(t *testing.T, report string, n int, runtime string) {
	t.Helper()
	runs := readLabRuns(t, report)
	if len(runs) != n {
		t.Fatalf("%d runs reported", len(runs))
	}
	for _, r := range runs {
		if !r.Passed || r.Runtime != runtime || len(r.LostWrites) != 0 || r.Linearizable != "Ok" || r.StartedAt.IsZero() {
			t.Errorf("run %s: %+v", r.Plan, r)
		}
		for subject, b := range r.Binaries {
			if len(b.SHA256) != 64 || !strings.HasPrefix(b.Version, "3.") || b.Path == "" {
				t.Errorf("run %s: binary %s recorded as %+v", r.Plan, subject, b)
			}
		}
		chose := map[string]string{}
		for _, s := range r.Steps {
			chose[s.Kind] = s.Detail
		}
		if !strings.HasPrefix(chose["partition"], "leader is m") || !strings.HasPrefix(chose["freeze"], "follower is m") ||
			!strings.HasPrefix(chose["compact"], "compacted at revision") || chose["add"] != "added m4" {
			t.Errorf("run %s: step details %v", r.Plan, chose)
		}
		// While the leader is cut off, writes stop until a new leader is elected (an election
		// timeout, 1 s by default, at least) and clients left on the cut-off member wait.
		if st := r.Steps[2].Availability; st.LongestStall < int64(500*time.Millisecond) {
			t.Errorf("run %s: the wait under a partition saw %+v", r.Plan, st)
		}
	}
}

// TestUpgradeLabNetnsFaults runs the faults plan, partition included, with members as local
// processes each in a network namespace of its own: the path for machines with no Docker
// engine. Nothing is left behind: no process, no namespace.
func TestUpgradeLabNetnsFaults(t *testing.T) {
	if err := netns.Available(); err != nil {
		cannotRun(t, "the netns runtime: %v", err)
	}
	before := namespaces(t)
	work := t.TempDir()
	ours := filepath.Join(work, "ours.yaml")
	os.WriteFile(ours, []byte(strings.NewReplacer("%START%", "3.5", "%TO%", "3.6", "container-faults", "netns-faults").Replace(faultsPlan)), 0o644)
	code, out := runTool(t, "upgradelab", "run", "--runtime", "netns", "--workdir", work, "--plan", ours,
		"--binary", "3.6="+ServerAt(t, LastReleaseLevel), "--binary", "3.5="+ServerAt(t, OldestLevel))
	t.Logf("upgradelab:\n%s", out)
	if code != 0 {
		t.Fatalf("upgradelab run: exit %d", code)
	}
	checkFaultRuns(t, filepath.Join(work, "report.json"), 1, "netns")
	for ns := range namespaces(t) {
		if !before[ns] {
			t.Errorf("namespace %s left behind", ns)
		}
	}
}

// namespaces are the names of the network namespaces that exist now.
func namespaces(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	set := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			set[f[0]] = true
		}
	}
	return set
}

// TestUpgradeLabStallThreshold: freezing the leader stalls writes for an election; a plan
// bounding stalls at 300 ms fails, naming the step. Freezes work in the process runtime too.
func TestUpgradeLabStallThreshold(t *testing.T) {
	work := t.TempDir()
	p := filepath.Join(work, "stall.yaml")
	os.WriteFile(p, []byte(`name: frozen-leader
members: 3
start: "3.6"
thresholds: {maxStall: 300ms}
steps:
  - wait: 1s
  - freeze: leader
  - wait: 3s
  - thaw: all
`), 0o644)
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--workdir", work, "--plan", p,
		"--binary", "3.6="+ServerAt(t, LastReleaseLevel))
	if code != 1 || !strings.Contains(out, "FAIL frozen-leader/3") {
		t.Fatalf("exit %d, want 1 with FAIL:\n%s", code, out)
	}
	runs := readLabRuns(t, filepath.Join(work, "report.json"))
	if len(runs) != 1 || !strings.HasPrefix(runs[0].Failure, "step ") || !strings.Contains(runs[0].Failure, "more than the 300ms allowed (max-stall)") {
		t.Fatalf("failure: %+v\n%s", runs, out)
	}
	// The stall begins with the freeze or in the wait after it: the failing step is one of those.
	if !strings.HasPrefix(runs[0].Failure, "step 2 (freeze leader)") && !strings.HasPrefix(runs[0].Failure, "step 3 (wait 3s)") {
		t.Errorf("failure names the wrong step: %s", runs[0].Failure)
	}
}

// TestUpgradeLabKilledLeavesNothing kills the lab (SIGKILL) in the middle of a container run:
// its containers stay until the next run, or upgradelab clean, removes them. A killed lab's
// process members die with it.
func TestUpgradeLabKilledLeavesNothing(t *testing.T) {
	requireDocker(t)
	for _, runtime := range []string{"container", "process"} {
		t.Run(runtime, func(t *testing.T) {
			work := t.TempDir()
			p := filepath.Join(work, "long.yaml")
			os.WriteFile(p, []byte("name: long\nmembers: 3\nstart: \"3.6\"\nsteps:\n  - wait: 5m\n"), 0o644)
			cmd := exec.Command(Binary(t, "upgradelab"), "run", "--runtime", runtime, "--workdir", work, "--plan", p,
				"--binary", "3.6="+ServerAt(t, LastReleaseLevel))
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			started := make(chan bool, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if strings.Contains(sc.Text(), "0. start 3 members") {
						started <- true
					}
				}
				started <- false
			}()
			select {
			case ok := <-started:
				if !ok {
					t.Fatal("the lab ended before its cluster started")
				}
			case <-time.After(90 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the cluster did not start within 90s")
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			if runtime == "process" {
				// Members die with the lab: no etcd with this work dir in its command line.
				deadline := time.Now().Add(10 * time.Second)
				for {
					left := processesMentioning(t, work)
					if len(left) == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("members outlived the killed lab: pids %v", left)
					}
					time.Sleep(200 * time.Millisecond)
				}
				return
			}
			if len(labResources(t)) == 0 {
				t.Fatal("the killed run's containers are gone already: the test proves nothing")
			}
			code, out := runTool(t, "upgradelab", "clean")
			if code != 0 || !strings.Contains(out, "removed 3 containers, 1 networks, 3 volumes") {
				t.Errorf("upgradelab clean: exit %d\n%s", code, out)
			}
			if left := labResources(t); len(left) > 0 {
				t.Errorf("left behind after clean: %v", left)
			}
		})
	}
}

// processesMentioning lists the pids whose command line contains s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
