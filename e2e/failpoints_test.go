package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// failpointMember is a member of the failpoint build (make build-failpoints) whose failpoints
// are served on GOFAIL_HTTP, as upstream's robustness tests run theirs.
type failpointMember struct {
	*Member
	fpURL string
}

func newFailpointMember(t *testing.T, m *Member, bin string) *failpointMember {
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	m.Bin = Binary(t, bin)
	m.Env = append(m.Env, "GOFAIL_HTTP="+addr)
	return &failpointMember{Member: m, fpURL: "http://" + addr}
}

// set gives a failpoint its terms through upstream's HTTP interface (PUT /name).
func (m *failpointMember) set(t *testing.T, name, terms string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, m.fpURL+"/"+name, strings.NewReader(terms))
	resp, err := healthClient.Do(req)
	if err != nil {
		t.Fatalf("set failpoint %s on %s: %v", name, m.Name, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("set failpoint %s on %s: %s %s", name, m.Name, resp.Status, b)
	}
}

// list is GET / of the failpoint server: every failpoint the binary has, name=terms per line.
func (m *failpointMember) list(t *testing.T) map[string]string {
	t.Helper()
	resp, err := healthClient.Get(m.fpURL + "/")
	if err != nil {
		t.Fatalf("list failpoints of %s: %v", m.Name, err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, terms, ok := strings.Cut(sc.Text(), "="); ok {
			out[name] = terms
		}
	}
	return out
}

// TestFailpointsAsUpstream: the failpoint build serves exactly the failpoints upstream's
// release of its level declares (read from upstream's source, as gofail reads it), with gofail's
// HTTP interface; the release build has none and serves nothing.
func TestFailpointsAsUpstream(t *testing.T) {
	for _, tc := range []struct{ bin, upstream string }{
		{"failpoints/etcd", Upstream37Version},
		{"failpoints/etcd-last-release", Upstream36Version},
		{"failpoints/etcd-3.5", Upstream35Version},
	} {
		t.Run(tc.bin, func(t *testing.T) {
			want := upstreamFailpoints(t, tc.upstream)
			m := newFailpointMember(t, NewMember(t), tc.bin)
			m.Start()
			got := m.list(t)
			var names []string
			for n, terms := range got {
				names = append(names, n)
				if terms != "" {
					t.Errorf("failpoint %s is set (%q) with nothing asking for it", n, terms)
				}
			}
			sort.Strings(names)
			if strings.Join(names, " ") != strings.Join(want, " ") {
				t.Errorf("failpoints served:\n ours     %v\n upstream %v", names, want)
			}
			doc, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if !strings.Contains(string(doc), "| `"+n+"` |") {
					t.Errorf("docs/operations.md does not list failpoint %s", n)
				}
			}
			// Set, read back, count and clear, as upstream's tooling does.
			m.set(t, "beforeSendWatchResponse", `sleep(1)`)
			if got := m.list(t)["beforeSendWatchResponse"]; got != "sleep(1)" {
				t.Errorf("after PUT: %q", got)
			}
			req, _ := http.NewRequest(http.MethodDelete, m.fpURL+"/beforeSendWatchResponse", nil)
			if resp, err := healthClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
				t.Errorf("DELETE: %v %v", resp, err)
			}
			req, _ = http.NewRequest(http.MethodPut, m.fpURL+"/noSuchFailpoint", strings.NewReader("panic"))
			if resp, err := healthClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
				t.Errorf("PUT of an unknown failpoint: %v %v", resp, err)
			}
		})
	}
	t.Run("release build", func(t *testing.T) {
		m := newFailpointMember(t, NewMember(t), "etcd")
		m.Start()
		if resp, err := healthClient.Get(m.fpURL + "/"); err == nil {
			resp.Body.Close()
			t.Errorf("the release build serves failpoints on GOFAIL_HTTP")
		}
	})
}

// upstreamFailpoints lists the gofail failpoints declared in upstream etcd's server module at
// version, from its source in the module cache (fetched from the proxy if needed), sorted.
func upstreamFailpoints(t *testing.T, version string) []string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "go.etcd.io/etcd/server/v3@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if err != nil || json.Unmarshal(out, &mod) != nil || mod.Dir == "" {
		cannotRun(t, "upstream etcd %s's source cannot be fetched: %v %s %s", version, err, mod.Error, out)
	}
	decl := regexp.MustCompile(`^\s*// gofail: var (\w+) `)
	seen := map[string]bool{}
	err = filepath.WalkDir(mod.Dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, line := range strings.Split(string(b), "\n") {
			if m := decl.FindStringSubmatch(line); m != nil {
				seen[m[1]] = true
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 40 {
		t.Fatalf("only %d failpoints found in upstream %s's source at %s", len(names), version, mod.Dir)
	}
	return names
}

// TestFailpointCrashesLoseNoWrite crashes members of a 3-member cluster, under a steady stream
// of writes, at three of upstream's failpoints: the leader before it writes a Ready to its WAL
// (raftBeforeSave), a member before its database commit (beforeCommit), and a member in the
// middle of a defrag, after the copy and before the rename (defragBeforeRename). Each comes back
// on its own data; no acknowledged write is lost, none is applied twice, and the members end
// with the same data.
func TestFailpointCrashesLoseNoWrite(t *testing.T) {
	c := NewCluster(t, 3)
	members := make([]*failpointMember, len(c.Members))
	for i, m := range c.Members {
		members[i] = newFailpointMember(t, m, "failpoints/etcd")
	}
	c.Start()
	load := startSteadyLoad(t, c, "ledger", 1)
	byName := map[string]*failpointMember{}
	for _, m := range members {
		byName[m.Name] = m
	}
	// crash sets name=panic on m, has trigger make m reach the point, waits for the process to
	// end by the panic, and starts it again on its data.
	crash := func(m *failpointMember, name string, trigger func()) {
		t.Helper()
		load.waitAcked(t, 50)
		panics := strings.Count(m.Log(), "failpoint panic")
		m.set(t, name, "panic")
		exited := m.Exited()
		if trigger != nil {
			go trigger()
		}
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not reach %s", m.Name, name)
		}
		if strings.Count(m.Log(), "failpoint panic") != panics+1 {
			t.Fatalf("%s ended, but not at %s:\n%s", m.Name, name, m.LogTail(30))
		}
		t.Logf("%s crashed at %s with %d writes acknowledged", m.Name, name, load.ackedCount())
		load.waitAcked(t, 50) // the others go on without it
		m.Start()
		load.waitAcked(t, 50)
	}

	leader := byName[c.Leader(10*time.Second).Name]
	crash(leader, "raftBeforeSave", nil)
	leader = byName[c.Leader(10*time.Second).Name]
	crash(leader, "beforeCommit", nil)
	var follower *failpointMember
	for _, m := range members {
		if m != byName[c.Leader(10*time.Second).Name] {
			follower = m
		}
	}
	crash(follower, "defragBeforeRename", func() {
		fcli := follower.Client()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		fcli.Defragment(ctx, follower.ClientURL) // fails: the member crashes in it
	})
	if _, err := os.Stat(follower.DataDir + "/member/snap/db"); err != nil {
		t.Fatalf("the database after a crash in defrag: %v", err)
	}
	acked := load.end()
	if len(acked) < 300 {
		t.Errorf("only %d writes acknowledged: the load was not steady", len(acked))
	}
	// Every member holds every acknowledged write, each applied once.
	for _, m := range members {
		checkAcked(t, m.Client(), "ledger", acked)
	}
	requireSameHashKV(t, c)
}

// TestWALReleaseFailpointOnAReceivedSnapshot: raftAfterWALRelease is where upstream has it, in
// a follower's Ready that carries the leader's snapshot, after the WAL segments it covers are
// released; a member's own snapshots pass by it (upstream's robustness suite blackholes a member
// until it needs a snapshot and waits for it to die there). The member that died there starts
// again on its data and serves every key.
func TestWALReleaseFailpointOnAReceivedSnapshot(t *testing.T) {
	c := NewCluster(t, 3, "--snapshot-count", "100", "--snapshot-catchup-entries", "10")
	members := make([]*failpointMember, len(c.Members))
	for i, m := range c.Members {
		members[i] = newFailpointMember(t, m, "failpoints/etcd")
	}
	c.Start()
	for _, m := range members {
		m.set(t, "raftAfterWALRelease", "panic")
	}
	cli := c.Client()
	put := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := cli.Put(Ctx(t), fmt.Sprintf("k%04d", i), "v"); err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
	}
	// Every member takes its own snapshots (one per 100 entries) and must not stop at the point.
	put(0, 350)
	for _, m := range members {
		if !m.Running() || strings.Contains(m.Log(), "failpoint panic") {
			t.Fatalf("%s stopped at raftAfterWALRelease on its own snapshot:\n%s", m.Name, m.LogTail(30))
		}
		if !strings.Contains(m.Log(), "saved snapshot to disk") {
			t.Fatalf("%s took no snapshot of its own in 350 writes", m.Name)
		}
	}
	leader := c.Leader(10 * time.Second)
	var f *failpointMember
	for _, m := range members {
		if m.Member != leader {
			f = m
		}
	}
	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	put(350, 700) // the leader's log now starts past where the stopped follower left off
	f.Env = append(f.Env, "GOFAIL_FAILPOINTS=raftAfterWALRelease=panic")
	if err := f.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.Exited():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop at raftAfterWALRelease on the leader's snapshot:\n%s", f.Name, f.LogTail(30))
	}
	if !strings.Contains(f.Log(), "failpoint panic") {
		t.Fatalf("%s ended, but not at the failpoint:\n%s", f.Name, f.LogTail(30))
	}
	f.Env = f.Env[:len(f.Env)-1]
	f.Start()
	waitKeys(t, f.Member, "k", 700)
	requireSameHashKV(t, c)
}

// failpointUpgradePlan is a rolling upgrade 3.6 -> 3.7 on failpoint builds with members crashed
// at upstream's failpoints along the way: the leader before it writes a Ready to its WAL while the
// cluster is mixed, a follower before its database commit on the new version.
const failpointUpgradePlan = `name: upgrade-with-failpoint-crashes
members: 3
start: "3.6"
thresholds: {maxStall: 10s}
steps:
  - replace: {version: "3.7", members: [m1]}
  - crash: {member: leader, at: raftBeforeSave}
  - restart: all
  - replace: {version: "3.7", members: [m2, m3]}
  - crash: {member: follower, at: beforeCommit}
  - restart: all
  - expect: {cluster: "3.7", storage: "3.7", server: "3.7"}
`

// TestUpgradeLabCrashesAtFailpoints runs that plan with upgradelab on the process runtime and
// bin/failpoints: each crash step lands on its failpoint (the member dies there), the members
// come back, and the lab's checks (no lost write, linearizable, equal hashes, watch) pass.
func TestUpgradeLabCrashesAtFailpoints(t *testing.T) {
	work := t.TempDir()
	p := filepath.Join(work, "plan.yaml")
	if err := os.WriteFile(p, []byte(failpointUpgradePlan), 0o644); err != nil {
		t.Fatal(err)
	}
	binDir := filepath.Dir(Binary(t, "failpoints/etcd"))
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--workdir", work, "--plan", p, "--bin-dir", binDir)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	runs := readLabRuns(t, filepath.Join(work, "report.json"))
	if len(runs) != 1 || !runs[0].Passed || len(runs[0].LostWrites) != 0 {
		t.Fatalf("runs: %+v\n%s", runs, out)
	}
	crashes := 0
	for _, s := range runs[0].Steps {
		if s.Kind == "crash" {
			crashes++
			if s.Error != "" {
				t.Errorf("step %s: %s", s.Step, s.Error)
			}
		}
	}
	if crashes != 2 {
		t.Fatalf("%d crash steps in the report", crashes)
	}
	// Each crash was a panic at the failpoint, in the log of the member it chose.
	logs, _ := filepath.Glob(filepath.Join(work, "*", "*.log"))
	panics := 0
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		panics += strings.Count(string(b), "failpoint panic")
	}
	if panics != 2 {
		t.Errorf("%d failpoint panics in the members' logs %v, want 2", panics, logs)
	}
}
