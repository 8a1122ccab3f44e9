package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/server/membership"
	"etcdx/server/schema"
)

// assessAnswer is the part of `upgradelab assess -w json` the tests read.
type assessAnswer struct {
	Facts struct {
		Members []struct {
			Name    string `json:"name"`
			ID      string `json:"id"`
			Learner bool   `json:"learner"`
			Live    *struct {
				Version string `json:"version"`
				Quota   int64  `json:"quota"`
			} `json:"live"`
		} `json:"members"`
		ClusterVersion string `json:"clusterVersion"`
	} `json:"facts"`
	Report struct {
		Target   string `json:"target"`
		Verdict  string `json:"verdict"`
		Findings []struct {
			Check, Subject, Verdict, Summary, Fix string
			Sources                               []string
		} `json:"findings"`
		Path []struct {
			Kind string `json:"kind"`
			To   string `json:"to"`
		} `json:"path"`
	} `json:"report"`
}

// assess runs upgradelab assess with -w json and returns its exit status and answer.
func assess(t *testing.T, args ...string) (int, assessAnswer) {
	t.Helper()
	var a assessAnswer
	code, out := runTool(t, "upgradelab", append([]string{"assess", "-w", "json"}, args...)...)
	// The JSON document is the whole of stdout; a note about --plan-out may follow on stderr.
	doc := out
	if i := strings.LastIndex(out, "\n}\n"); i >= 0 {
		doc = out[:i+3]
	}
	if err := json.Unmarshal([]byte(doc), &a); err != nil {
		t.Fatalf("upgradelab assess %v: exit %d, output is no JSON answer: %v\n%s", args, code, err, out)
	}
	return code, a
}

// findings are "check subject verdict" lines, for the tests' messages and lookups.
func (a assessAnswer) findings() string {
	var lines []string
	for _, f := range a.Report.Findings {
		lines = append(lines, f.Check+" "+f.Subject+" "+f.Verdict)
	}
	return strings.Join(lines, "\n")
}

func (a assessAnswer) has(t *testing.T, line string) {
	t.Helper()
	if !strings.Contains("\n"+a.findings()+"\n", "\n"+line+"\n") {
		t.Errorf("no finding %q; findings:\n%s", line, a.findings())
	}
}

// TestAssessAHealthyClusterAndRehearseItsPath: a healthy 3.6 cluster of ours, assessed for 3.7,
// gets no blocker and a one-hop path; the path, written as a lab plan, runs green in the lab.
func TestAssessAHealthyClusterAndRehearseItsPath(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	for _, m := range c.Members {
		m.Bin = ServerAt(t, LastReleaseLevel)
	}
	c.Start()
	writeN(t, c.Client(), "k", 20)
	planFile := filepath.Join(t.TempDir(), "path.yaml")
	code, a := assess(t, "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.7", "--plan-out", planFile, "--subjects", "ours")
	if code != 0 || a.Report.Verdict != "ok" {
		t.Fatalf("exit %d, verdict %s; findings:\n%s", code, a.Report.Verdict, a.findings())
	}
	if len(a.Facts.Members) != 3 || a.Facts.ClusterVersion != "3.6.0" {
		t.Errorf("members %d, cluster version %q", len(a.Facts.Members), a.Facts.ClusterVersion)
	}
	for _, m := range a.Facts.Members {
		if m.Live == nil || m.Live.Version != ReleaseOf(LastReleaseLevel) {
			t.Errorf("member %s: live %+v, want version %s", m.Name, m.Live, ReleaseOf(LastReleaseLevel))
		}
	}
	if len(a.Report.Path) != 1 || a.Report.Path[0].Kind != "upgrade" || a.Report.Path[0].To != ReleaseOf(CurrentLevel) {
		t.Errorf("path %+v, want one upgrade to %s", a.Report.Path, ReleaseOf(CurrentLevel))
	}
	a.has(t, "health cluster ok")
	a.has(t, "alarms cluster ok")

	code, text := runTool(t, "upgradelab", "assess", "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.7.3")
	if code != 0 || !strings.Contains(text, "Assessment: 3 members at 3.6.16, to 3.7.3: OK") || !strings.Contains(text, "1. Upgrade 3.6.16 -> 3.7.3") {
		t.Errorf("text answer, exit %d:\n%s", code, text)
	}

	// The written plan, rehearsed on a cluster of the same size.
	work := t.TempDir()
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--plan", planFile,
		"--bin-dir", filepath.Dir(Binary(t, "etcd")), "--workdir", work)
	if code != 0 {
		t.Fatalf("upgradelab run --plan %s: exit %d\n%s", planFile, code, out)
	}
	if reps := readLabReport(t, filepath.Join(work, "report.json")); len(reps) != 1 || !reps[0].Passed || reps[0].Members != 3 {
		t.Fatalf("rehearsal: %+v", reps)
	}
}

// TestAssessNamesLiveBlockers: a 3.5 cluster of ours assessed straight for 3.7, with a NOSPACE
// alarm, a learner added but never started, and a config file with flags 3.6 and 3.7 refuse:
// each is named with its fix, the verdict blocks (exit 1), and the path goes through 3.6.
func TestAssessNamesLiveBlockers(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3, "--quota-backend-bytes", strconv.Itoa(2<<20))
	for _, m := range c.Members {
		m.Bin = ServerAt(t, OldestLevel)
	}
	c.Start()
	cli := c.Client()
	big := strings.Repeat("x", 64<<10)
	for i := 0; ; i++ {
		if _, err := cli.Put(Ctx(t), fmt.Sprintf("big/%d", i), big); err != nil {
			if !strings.Contains(err.Error(), "space exceeded") {
				t.Fatalf("put %d: %v", i, err)
			}
			break
		}
		if i > 200 {
			t.Fatal("no NOSPACE alarm after 200 puts of 64 KiB under a 2 MiB quota")
		}
	}
	c.WaitPeersSettled()
	added, err := cli.MemberAddAsLearner(Ctx(t), []string{fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))})
	if err != nil {
		t.Fatal(err)
	}
	learner := fmt.Sprintf("%x", added.Member.ID)

	config := filepath.Join(t.TempDir(), "m1.conf.yml")
	if err := os.WriteFile(config, []byte("name: m1\nexperimental-compaction-batch-limit: 1000\nenable-v2: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "path.yaml")
	code, a := assess(t, "--endpoints", strings.Join(c.Endpoints(), ","), "--config", config, "--to", "3.7",
		"--plan-out", planFile, "--subjects", "ours")
	if code != 1 || a.Report.Verdict != "block" {
		t.Fatalf("exit %d, verdict %s, want 1 and block; findings:\n%s", code, a.Report.Verdict, a.findings())
	}
	for _, want := range []string{"skipped-minor cluster block", "health cluster block", "learner-present " + learner + " warn",
		"flags m1 block", "v2-custom m1 warn", "v2-custom cluster warn"} {
		a.has(t, want)
	}
	alarmed := 0
	for _, f := range a.Report.Findings {
		if f.Check == "alarms" && f.Verdict == "block" && strings.Contains(f.Summary, "NOSPACE") && strings.Contains(f.Fix, "alarm disarm") {
			alarmed++
		}
		if f.Check == "flags" && strings.Contains(f.Summary, "--experimental-compaction-batch-limit") && !strings.Contains(f.Fix, "--compaction-batch-limit") {
			t.Errorf("flag finding without its replacement: %+v", f)
		}
	}
	// A 3.5 member reports its quota only as a metric (etcd_server_quota_backend_bytes).
	for _, m := range a.Facts.Members {
		if m.Live != nil && m.Live.Quota != 2<<20 {
			t.Errorf("member %s: quota %d, want %d (--quota-backend-bytes)", m.Name, m.Live.Quota, 2<<20)
		}
	}
	a.has(t, "quota m1 warn")
	if alarmed == 0 {
		t.Errorf("the NOSPACE alarm is not named with its fix; findings:\n%s", a.findings())
	}
	if len(a.Report.Path) != 2 || a.Report.Path[0].To != ReleaseOf(LastReleaseLevel) || a.Report.Path[1].To != ReleaseOf(CurrentLevel) {
		t.Errorf("path %+v, want 3.5.35 -> %s -> %s", a.Report.Path, ReleaseOf(LastReleaseLevel), ReleaseOf(CurrentLevel))
	}

	// The path itself (once the alarm, the learner and the flags are dealt with) runs green:
	// ours at 3.5, 3.6 and 3.7, a snapshot on every member before 3.7.
	work := t.TempDir()
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--plan", planFile, "--members", "1",
		"--bin-dir", filepath.Dir(Binary(t, "etcd")), "--workdir", work)
	if code != 0 || !strings.Contains(out, "snapshot on every member [every member saved a snapshot") {
		t.Fatalf("upgradelab run --plan %s: exit %d\n%s", planFile, code, out)
	}

	code, out = runTool(t, "upgradelab", "assess", "--to", "3.7")
	if code != 2 || !strings.Contains(out, "give --endpoints") {
		t.Errorf("assess without a source: exit %d\n%s", code, out)
	}
}

// driftedCluster is an upstream 3.5.35 cluster of three (with v2 data written through its v2
// API, when asked) and a member removed, whose third member is stopped with its v3 store edited into the two
// states that broke 3.5 -> 3.6 upgrades: a voter (m2) still a learner there (etcd-io/etcd#19557,
// as upstream's own test makes it) and the removed member still there (etcd-io/etcd#20967).
type driftedCluster struct {
	*Cluster
	m3              *Member
	demoted, zombie uint64
	zombiePeerURLs  []string
}

func newDriftedCluster(t *testing.T, v2data bool) driftedCluster {
	t.Helper()
	var extra []string
	if v2data {
		extra = []string{"--enable-v2"}
	}
	c := NewCluster(t, 3, extra...)
	for _, m := range c.Members {
		m.Bin = UpstreamBinaryAt(t, Upstream35Version, "etcd")
	}
	c.Start()
	writeN(t, c.Client(), "k", 10)
	if v2data {
		resp, err := http.PostForm(c.Members[0].ClientURL+"/v2/keys/app/config", url.Values{"value": {"custom"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("v2 write: %s", resp.Status)
		}
	}
	c.WaitPeersSettled()
	cli := c.Client()
	zombieURLs := []string{fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))}
	var zombie uint64
	retryTimedOut(t, "add the learner", func() error {
		added, err := cli.MemberAddAsLearner(Ctx(t), zombieURLs)
		if errors.Is(err, rpctypes.ErrPeerURLExist) { // an attempt that timed out was applied
			zombie, err = memberIDByPeerURL(t, c, zombieURLs[0]), nil
		} else if err == nil {
			zombie = added.Member.ID
		}
		return err
	})
	retryTimedOut(t, "remove the learner", func() error {
		_, err := cli.MemberRemove(Ctx(t), zombie)
		if errors.Is(err, rpctypes.ErrMemberNotFound) { // an attempt that timed out was applied
			return nil
		}
		return err
	})
	d := driftedCluster{Cluster: c, m3: c.Members[2], demoted: memberIDOf(t, c, c.Members[1].Name), zombie: zombie,
		zombiePeerURLs: zombieURLs}
	// The removal reaches m3 before it stops.
	ctx, cancel := context.WithTimeout(Ctx(t), 10*time.Second)
	defer cancel()
	waitFor(t, ctx, "m3 to see the removal", func() bool { return memberCount(t, d.m3) == 3 })
	if err := d.m3.Stop(); err != nil {
		t.Fatal(err)
	}

	db, err := bolt.Open(schema.BackendPath(d.m3.DataDir), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := membership.Read(db)
	if err == nil {
		members := mem.List()
		for i := range members {
			if members[i].ID == d.demoted {
				members[i].IsLearner = true
			}
		}
		members = append(members, membership.Member{ID: d.zombie, PeerURLs: d.zombiePeerURLs})
		err = db.Update(func(tx *bolt.Tx) error { return membership.Rewrite(tx, members) })
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestAssessReadsStoppedMembersDataDirs: assess reads the stopped member's data dir of a
// drifted cluster (newDriftedCluster), names the custom v2 data and both drifts, and changes no
// file of it.
func TestAssessReadsStoppedMembersDataDirs(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	d := newDriftedCluster(t, true)
	c, m2, m3 := d.Cluster, d.Members[1], d.m3
	before := treeHash(t, m3.DataDir)
	code, a := assess(t, "--endpoints", c.Members[0].ClientURL+","+m2.ClientURL, "--data-dir", m3.DataDir, "--to", "3.6")
	if after := treeHash(t, m3.DataDir); after != before {
		t.Errorf("assess changed the data dir it read")
	}
	if code != 1 || a.Report.Verdict != "block" {
		t.Fatalf("exit %d, verdict %s; findings:\n%s", code, a.Report.Verdict, a.findings())
	}
	a.has(t, "v2-custom m3 block")
	a.has(t, "learner-mismatch m3 block")
	a.has(t, "zombie-members m3 block")
	a.has(t, "health cluster ok")
	for _, f := range a.Report.Findings {
		switch f.Check {
		case "learner-mismatch":
			if !strings.Contains(f.Summary, fmt.Sprintf("%x", d.demoted)) {
				t.Errorf("learner-mismatch does not name m2 (%x): %s", d.demoted, f.Summary)
			}
		case "zombie-members":
			if !strings.Contains(f.Summary, fmt.Sprintf("%x", d.zombie)) {
				t.Errorf("zombie-members does not name the removed member (%x): %s", d.zombie, f.Summary)
			}
		}
	}
}

// retryTimedOut repeats a membership change upstream answered with "request timed out": on a
// loaded machine (CI runs many clusters at once) a proposal can miss upstream's 7 s request
// timeout, for instance when it was forwarded to a leader that just lost its term. The change may
// have been applied; change itself takes the answer that says so as done.
func retryTimedOut(t *testing.T, what string, change func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := change()
		if err == nil {
			return
		}
		if !errors.Is(err, rpctypes.ErrTimeout) && !errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: %v; again", what, err)
	}
}

func memberIDOf(t *testing.T, c *Cluster, name string) uint64 {
	t.Helper()
	return memberIDWhere(t, c, "named "+name, func(m *pb.Member) bool { return m.Name == name })
}

func memberIDByPeerURL(t *testing.T, c *Cluster, peerURL string) uint64 {
	t.Helper()
	return memberIDWhere(t, c, "with peer URL "+peerURL, func(m *pb.Member) bool {
		return len(m.PeerURLs) > 0 && m.PeerURLs[0] == peerURL
	})
}

// memberIDWhere is the ID of the member the cluster lists that match picks (what says which).
func memberIDWhere(t *testing.T, c *Cluster, what string, match func(*pb.Member) bool) uint64 {
	t.Helper()
	list, err := c.Client().MemberList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if match(m) {
			return m.ID
		}
	}
	t.Fatalf("no member %s: %v", what, list.Members)
	return 0
}

func memberCount(t *testing.T, m *Member) int {
	list, err := m.Client().MemberList(Ctx(t))
	if err != nil {
		return -1
	}
	return len(list.Members)
}

// treeHash is one hash of every file's name and content under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// operator plays the operator for upgradelab guide: it waits for each "==> Step" line, does what
// it says to the named member with the binary bin (stop, swap, start), and returns when the
// guide exits. swap may change the binary the member gets (a mistake the test makes on purpose).
func operator(t *testing.T, c *Cluster, p *CtlProc, bin string, swap func(step int, m *Member) string) (int, string) {
	t.Helper()
	for step := 1; ; step++ {
		marker := fmt.Sprintf("==> Step %d: on ", step)
		deadline := time.Now().Add(2 * time.Minute)
		for !strings.Contains(p.Output(), marker) {
			select {
			case <-p.done:
				return p.Wait(time.Second)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no step %d within 2m; output:\n%s", step, p.Output())
			}
			time.Sleep(50 * time.Millisecond)
		}
		out := p.Output()
		rest := out[strings.Index(out, marker)+len(marker):]
		name := rest[:strings.Index(rest, "'s host")]
		var m *Member
		for _, cm := range c.Members {
			if cm.Name == name {
				m = cm
			}
		}
		if m == nil {
			t.Fatalf("step %d names %q, no member of the cluster", step, name)
		}
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		m.Bin = bin
		if swap != nil {
			m.Bin = swap(step, m)
		}
		m.Start()
	}
}

// TestGuideWalksAnOperatorThroughAnUpgrade: the test plays the operator on a 3.6 cluster of
// ours under writes: the guide names one member at a time (the leader last, after moving its
// leadership), checks each gate, sees the cluster and storage versions reach 3.7 and ends with
// the members' hashes agreeing.
func TestGuideWalksAnOperatorThroughAnUpgrade(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	for _, m := range c.Members {
		m.Bin = ServerAt(t, LastReleaseLevel)
	}
	c.Start()
	writeN(t, c.Client(), "before", 20)
	stopWrites := make(chan struct{})
	wrote := make(chan int)
	go func() {
		n := 0
		defer func() { wrote <- n }()
		cli := c.Client()
		for {
			select {
			case <-stopWrites:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := cli.Put(Ctx(t), fmt.Sprintf("during/%d", n), "v"); err == nil {
				n++
			}
		}
	}()
	p := StartCtl(t, Binary(t, "upgradelab"), nil, "guide", "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.7", "--step-timeout", "60s")
	code, out := operator(t, c, p, ServerAt(t, CurrentLevel), nil)
	close(stopWrites)
	if n := <-wrote; n == 0 {
		t.Error("no write succeeded during the guided upgrade")
	}
	if code != 0 {
		t.Fatalf("guide exit %d:\n%s", code, out)
	}
	for _, want := range []string{"==> Step 3: on ", "moves leadership to", "ok: cluster version 3.7, storage version 3.7 on every member.",
		"Done: the members' key-value stores agree"} {
		if !strings.Contains(out, want) {
			t.Errorf("guide output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "==> Step 4") {
		t.Errorf("more steps than members:\n%s", out)
	}
	c.WaitVersions("3.7.0", "3.7.0", 10*time.Second)
}

// TestGuideStopsAtAFailedGate: the operator starts the old binary again at the first step; the
// gate does not pass, and the guide stops (exit 1) saying what it saw and the way back.
func TestGuideStopsAtAFailedGate(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	old := ServerAt(t, LastReleaseLevel)
	for _, m := range c.Members {
		m.Bin = old
	}
	c.Start()
	p := StartCtl(t, Binary(t, "upgradelab"), nil, "guide", "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.7", "--step-timeout", "5s")
	code, out := operator(t, c, p, ServerAt(t, CurrentLevel), func(int, *Member) string { return old })
	if code != 1 {
		t.Fatalf("guide exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"runs 3.6.16, not 3.7.3", "What to do:", "put etcd 3.6.16 back on", "upgradelab assess"} {
		if !strings.Contains(out, want) {
			t.Errorf("guide output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "==> Step 2") {
		t.Errorf("the guide went on past the failed gate:\n%s", out)
	}
}

// TestGuideStopsWhenAMemberFallsBehind: the member the operator swaps in runs 3.7, answers and
// catches up, then stops applying (a failpoint build with beforeApplyOneEntryNormal asleep after
// its first 20 entries) while writes go on: it never stays within --max-lag of the leader for
// --settle, the gate fails on the lag, and the guide stops (exit 1) saying how far behind it is
// and the way back.
func TestGuideStopsWhenAMemberFallsBehind(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	for _, m := range c.Members {
		m.Bin = ServerAt(t, LastReleaseLevel)
	}
	c.Start()
	stuck := Binary(t, "failpoints/etcd")
	var writing sync.Mutex // held while the member is swapped: its catch-up stays short
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		cli := c.Client()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			writing.Lock()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			cli.Put(ctx, fmt.Sprintf("load/%d", n%50), "v") // a put through the stuck member times out
			cancel()
			writing.Unlock()
		}
	}()
	p := StartCtl(t, Binary(t, "upgradelab"), nil, "guide", "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.7",
		"--max-lag", "5", "--settle", "2s", "--step-timeout", "8s")
	p.WaitOutput("==> Step 1: on ", 2*time.Minute)
	out := p.Output()
	rest := out[strings.Index(out, "==> Step 1: on ")+len("==> Step 1: on "):]
	name := rest[:strings.Index(rest, "'s host")]
	var m *Member
	for _, cm := range c.Members {
		if cm.Name == name {
			m = cm
		}
	}
	if m == nil {
		t.Fatalf("step 1 names %q, no member of the cluster", name)
	}
	writing.Lock()
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Bin = stuck
	m.Env = append(m.Env, "GOFAIL_FAILPOINTS=beforeApplyOneEntryNormal=20*off->sleep(600000)")
	m.Start()
	writing.Unlock()
	code, out := p.Wait(time.Minute)
	if code != 1 {
		t.Fatalf("guide exit %d, want 1:\n%s", code, out)
	}
	t.Logf("guide:\n%s", out)
	for _, want := range []string{"entries behind the leader", "(the bound is 5)", "What to do:", "put etcd 3.6.16 back on " + name} {
		if !strings.Contains(out, want) {
			t.Errorf("guide output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "==> Step 2") {
		t.Errorf("the guide went on past the failed gate:\n%s", out)
	}
}

// TestGuideWalksADowngrade: from 3.7 to 3.6, the guide enables the downgrade itself (saying so),
// waits for the cluster and storage versions to go down, names each member to swap, and says when
// the downgrade is complete: every member on 3.6, the downgrade info cleared (upstream gives no
// such signal: etcd-io/etcd#19439).
func TestGuideWalksADowngrade(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	for _, m := range c.Members {
		m.Bin = ServerAt(t, CurrentLevel)
	}
	c.Start()
	writeN(t, c.Client(), "k", 20)
	p := StartCtl(t, Binary(t, "upgradelab"), nil, "guide", "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.6", "--step-timeout", "60s")
	code, out := operator(t, c, p, ServerAt(t, LastReleaseLevel), nil)
	if code != 0 {
		t.Fatalf("guide exit %d:\n%s", code, out)
	}
	for _, want := range []string{"now validates and enables the downgrade to 3.6", "ok: cluster version 3.6, storage version 3.6 on every member: the binaries can now be swapped.",
		"==> Step 3: on ", "the downgrade is complete: every member runs 3.6.16", "Done: the members' key-value stores agree"} {
		if !strings.Contains(out, want) {
			t.Errorf("guide output lacks %q:\n%s", want, out)
		}
	}
	st, err := c.Client().Status(Ctx(t), c.Members[0].ClientURL)
	if err != nil || st.DowngradeInfo == nil || st.DowngradeInfo.Enabled {
		t.Errorf("after the guide, status %+v (%v): want the downgrade info cleared", st, err)
	}
}

// TestOursAsTheSafeHopForDriftedMembership: the drifted member's data dir (newDriftedCluster,
// without v2 data, which 3.6 refuses by itself) under ours and upstream 3.6.16. Ours at 3.6
// refuses it, naming the removed member and the remedy. Upstream 3.6.16 starts and brings the
// removed member back into its member list. Ours at 3.5 (upstream 3.5.26+'s behaviour) then takes
// both stores back in line at start, after which ours at 3.6 starts with the right membership.
func TestOursAsTheSafeHopForDriftedMembership(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	d := newDriftedCluster(t, false)
	m3 := d.m3
	listOf := func() map[uint64]bool { // member ID -> is a learner, as m3 itself sees it
		list, err := m3.Client().MemberList(Ctx(t), clientv3.WithSerializable())
		if err != nil {
			t.Fatal(err)
		}
		out := map[uint64]bool{}
		for _, m := range list.Members {
			out[m.ID] = m.IsLearner
		}
		return out
	}

	before := treeHash(t, m3.DataDir)
	m3.Bin = ServerAt(t, LastReleaseLevel)
	if err := m3.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	if code, err := m3.Wait(30 * time.Second); code == 0 || err != nil {
		t.Fatalf("ours at 3.6 on the drifted data dir: exit %d (%v), want a refusal\n%s", code, err, m3.LogTail(20))
	}
	for _, want := range []string{fmt.Sprintf("%x", d.zombie), "etcd-io/etcd#20967", "start this data dir at 3.5 first"} {
		if !m3.LogHas(want) {
			t.Errorf("the refusal does not say %q:\n%s", want, m3.LogTail(10))
		}
	}
	if treeHash(t, m3.DataDir) != before {
		t.Error("the refused start changed the data dir")
	}

	m3.Bin = UpstreamBinaryAt(t, Upstream36Version, "etcd")
	m3.Start()
	up := listOf()
	if err := m3.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, back := up[d.zombie]; !back {
		t.Errorf("upstream 3.6.16 on the drifted data dir: members %v; expected the removed member %x back (etcd-io/etcd#20967)", up, d.zombie)
	}
	t.Logf("upstream 3.6.16 on the drifted data dir lists %d members; m2 (%x) a learner: %v", len(up), d.demoted, up[d.demoted])

	m3.Bin = ServerAt(t, OldestLevel)
	m3.Start()
	for _, want := range []string{"Syncing member in v3store", "Removing zombie member from v3store"} {
		if !m3.LogHas(want) {
			t.Errorf("ours at 3.5 did not log %q", want)
		}
	}
	if err := m3.Stop(); err != nil {
		t.Fatal(err)
	}
	m3.Bin = ServerAt(t, LastReleaseLevel)
	m3.Start()
	ours := listOf()
	if _, back := ours[d.zombie]; back || ours[d.demoted] || len(ours) != 3 {
		t.Errorf("ours at 3.6 after ours at 3.5: members %v; want the three members, m2 (%x) a voter", ours, d.demoted)
	}
}

// rehearsalRun is what the rehearsal tests read of a lab report's run.
type rehearsalRun struct {
	Passed    bool   `json:"passed"`
	Runtime   string `json:"runtime"`
	Rehearsal *struct {
		Shape struct {
			Keys     int `json:"keys"`
			ValueP50 int `json:"valueP50"`
			Prefixes []struct {
				Prefix string `json:"prefix"`
				Keys   int    `json:"keys"`
			} `json:"prefixes"`
		} `json:"shape"`
		WorkloadShape string `json:"workloadShape"`
		DataIntact    string `json:"dataIntact"`
		AuthIntact    string `json:"authIntact"`
	} `json:"rehearsal"`
}

// readRehearsalRuns reads work/report.json, and returns its bytes for messages too.
func readRehearsalRuns(t *testing.T, work string) ([]rehearsalRun, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(work, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []rehearsalRun
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatal(err)
	}
	return runs, b
}

// TestRehearseAnAuthSnapshotThroughThreeLines: a snapshot taken (with upstream etcdctl 3.5.35) from
// an upstream 3.5.35 cluster with authentication on, users, roles and data, rehearsed in the lab
// from 3.5.35 through ours at 3.6 and 3.7 and back down to 3.5.35 under the workload: the run
// passes, and the restored data and its users, roles and permissions come through unchanged.
// (With upstream 3.7.3 at the 3.7 hop the same rehearsal fails: TestUpstream37ReplaysNo35V2Requests.)
func TestRehearseAnAuthSnapshotThroughThreeLines(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	src := NewMember(t)
	src.Bin = UpstreamBinaryAt(t, Upstream35Version, "etcd")
	src.Start()
	cli := src.Client()
	for i := 0; i < 40; i++ {
		if _, err := cli.Put(Ctx(t), fmt.Sprintf("/registry/pods/default/web-%02d", i), strings.Repeat("p", 300+i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		if _, err := cli.Put(Ctx(t), fmt.Sprintf("/registry/configmaps/kube-system/c%d", i), strings.Repeat("c", 900)); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []func() error{
		func() error { _, err := cli.UserAdd(Ctx(t), "root", "rootpw"); return err },
		func() error { _, err := cli.UserGrantRole(Ctx(t), "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(Ctx(t), "reader"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(Ctx(t), "reader", "/registry/pods/", clientv3.GetPrefixRangeEnd("/registry/pods/"), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := cli.UserAdd(Ctx(t), "alice", "alicepw"); return err },
		func() error { _, err := cli.UserGrantRole(Ctx(t), "alice", "reader"); return err },
		func() error { _, err := cli.AuthEnable(Ctx(t)); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := filepath.Join(t.TempDir(), "backup.db")
	if code, stderr, _ := runCLI(t, UpstreamBinaryAt(t, Upstream35Version, "etcdctl"), "--endpoints", src.ClientURL, "--user", "root:rootpw", "snapshot", "save", snapshot); code != 0 {
		t.Fatalf("etcdctl snapshot save: exit %d\n%s", code, stderr)
	}

	planFile := filepath.Join(t.TempDir(), "there-and-back.yaml")
	if err := os.WriteFile(planFile, []byte(`name: there-and-back
description: 3.5.35 -> ours 3.6 -> ours 3.7 -> ours 3.6 -> 3.5.35
members: 3
start: upstream-3.5.35
steps:
  - replace: {version: "3.6", order: leader-last}
  - expect: {cluster: "3.6", storage: "3.6", server: "3.6"}
  - replace: {version: "3.7", order: leader-last}
  - expect: {cluster: "3.7", storage: "3.7", server: "3.7"}
  - downgrade: {action: enable, version: "3.6"}
  - expect: {cluster: "3.6", storage: "3.6"}
  - replace: {version: "3.6", order: leader-last}
  - downgrade: {action: enable, version: "3.5"}
  - expect: {cluster: "3.5", storage: "3.5"}
  - replace: {version: upstream-3.5.35, order: leader-last}
  - expect: {cluster: "3.5", storage: "3.5", server: "3.5"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	code, out := runTool(t, "upgradelab", "run", "--plan", planFile, "--from-snapshot", snapshot, "--user", "root:rootpw",
		"--bin-dir", filepath.Dir(Binary(t, "etcd")), "--workdir", work)
	if code != 0 {
		t.Fatalf("upgradelab run --from-snapshot: exit %d\n%s", code, out)
	}
	reps, b := readRehearsalRuns(t, work)
	if len(reps) != 1 || !reps[0].Passed || reps[0].Rehearsal == nil {
		t.Fatalf("report: %s", b)
	}
	r := reps[0].Rehearsal
	if r.Shape.Keys != 50 || len(r.Shape.Prefixes) != 2 || r.Shape.Prefixes[0].Prefix != "/registry/pods" || r.Shape.Prefixes[0].Keys != 40 || r.Shape.ValueP50 < 300 {
		t.Errorf("the restored data's shape: %+v", r.Shape)
	}
	if !strings.Contains(r.DataIntact, "50 keys") || !strings.Contains(r.AuthIntact, "unchanged (as root)") {
		t.Errorf("data %q, auth %q", r.DataIntact, r.AuthIntact)
	}
	if !strings.Contains(out, "restore "+snapshot+" into 3 members") {
		t.Errorf("the run does not say it restored the snapshot:\n%s", out)
	}
}

// TestUpstream37ReplaysNo35V2Requests: a member that ran 3.5.35 (which proposes a bare v2 request
// at every start), then ours at 3.6, has those entries in its WAL after its newest snapshot.
// Assess names them for a path into 3.7; upstream 3.7.3 crash-loops on that data dir ("unmarshal
// should never fail"); ours at 3.7 replays them and starts.
func TestUpstream37ReplaysNo35V2Requests(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	m := NewMember(t)
	m.Bin = UpstreamBinaryAt(t, Upstream35Version, "etcd")
	m.Start()
	writeN(t, m.Client(), "k", 10)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Bin = ServerAt(t, LastReleaseLevel)
	m.Start()
	writeN(t, m.Client(), "l", 10)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}

	code, a := assess(t, "--data-dir", m.DataDir, "--from", ReleaseOf(LastReleaseLevel), "--to", "3.7")
	if code != 1 {
		t.Fatalf("assess: exit %d, want 1; findings:\n%s", code, a.findings())
	}
	a.has(t, "v2-entries m1 block")

	copyDir := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", m.DataDir, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v\n%s", err, out)
	}
	up := NewMember(t)
	up.Bin, up.DataDir = UpstreamBinaryAt(t, Upstream37Version, "etcd"), copyDir
	up.ClientURL, up.PeerURL, up.InitialCluster = m.ClientURL, m.PeerURL, m.InitialCluster
	if err := up.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	if code, err := up.Wait(30 * time.Second); code == 0 || err != nil || !up.LogHas("unmarshal should never fail") {
		t.Errorf("upstream 3.7.3 on the data dir: exit %d (%v); want the crash replaying 3.5's v2 requests\n%s", code, err, up.LogTail(8))
	}

	m.Bin = ServerAt(t, CurrentLevel)
	m.Start()
	if _, err := m.Client().Get(Ctx(t), "k/000"); err != nil {
		t.Fatal(err)
	}
}

// TestGuideWaitsForSnapshotsBeforeUpstream37: upstream 3.5.35 to upstream 3.7.3 with the guide,
// the test as the operator (3.6 is ours). After the 3.6 hop the guide waits until every member has
// saved a snapshot (the operator starts 3.6 with a low --snapshot-count, and writes go on), so the
// bare v2 requests the 3.5 members left in every WAL are never replayed by upstream 3.7.3, which
// crash-loops on them (TestUpstream37ReplaysNo35V2Requests): every member comes up on 3.7.3.
func TestGuideWaitsForSnapshotsBeforeUpstream37(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	for _, m := range c.Members {
		m.Bin = UpstreamBinaryAt(t, Upstream35Version, "etcd")
	}
	c.Start()
	writeN(t, c.Client(), "before", 20)
	stopWrites := make(chan struct{})
	defer close(stopWrites)
	go func() {
		cli := c.Client()
		for n := 0; ; n++ {
			select {
			case <-stopWrites:
				return
			case <-time.After(10 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			cli.Put(ctx, fmt.Sprintf("during/%d", n%100), "v") // errors while members restart are expected
			cancel()
		}
	}()
	up37 := UpstreamBinaryAt(t, Upstream37Version, "etcd") // built before the guide's clock runs
	p := StartCtl(t, Binary(t, "upgradelab"), nil, "guide", "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.7", "--step-timeout", "90s")
	code, out := operator(t, c, p, "", func(step int, m *Member) string {
		if step <= 3 {
			m.Extra = append(m.Extra, "--snapshot-count", "100")
			return ServerAt(t, LastReleaseLevel)
		}
		return up37
	})
	if code != 0 {
		for _, m := range c.Members {
			t.Logf("%s runs %s; its log ends:\n%s", m.Name, m.Bin, m.LogTail(15))
		}
		t.Fatalf("guide exit %d:\n%s", code, out)
	}
	t.Logf("guide:\n%s", out)
	for _, want := range []string{"==> Before 3.7: every member must save a snapshot", "ok: every member saved a snapshot.",
		"==> Step 6: on ", "ok: cluster version 3.7, storage version 3.7 on every member.", "Done: the members' key-value stores agree"} {
		if !strings.Contains(out, want) {
			t.Errorf("guide output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "ok: every member saved a snapshot.") > strings.Index(out, "==> Step 4: on ") {
		t.Errorf("a member went to 3.7 before every member saved a snapshot:\n%s", out)
	}
	for _, m := range c.Members {
		if m.LogHas("unmarshal should never fail") || m.LogHas("panic") {
			t.Errorf("%s:\n%s", m.Name, m.LogTail(10))
		}
	}
	if r, err := c.Client().Get(Ctx(t), "before/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || r.Count != 20 {
		t.Errorf("the data after 3.5 -> 3.7: %v, %v", r, err)
	}
}

// TestGuideWalksARollingReplacement: the guide takes a 3.6 cluster of ours to 3.7 by rolling
// replacement. For each member the test (the operator) adds a learner at 3.7 and starts it; the
// guide waits until it is caught up, promotes it, moves leadership off the old member when it
// leads, and removes it. The cluster ends with three new members at 3.7 and the data intact.
func TestGuideWalksARollingReplacement(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	for _, m := range c.Members {
		m.Bin = ServerAt(t, LastReleaseLevel)
	}
	c.Start()
	writeN(t, c.Client(), "k", 30)
	c.WaitPeersSettled()
	p := StartCtl(t, Binary(t, "upgradelab"), nil, "guide", "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.7",
		"--mode", "replacement", "--step-timeout", "60s")
	var added []*Member
	for step := 1; step <= 3; step++ {
		p.WaitOutput(fmt.Sprintf("==> Step %d: add a learner running etcd %s", step, ReleaseOf(CurrentLevel)), 2*time.Minute)
		n := NewMember(t)
		n.Name, n.Bin = fmt.Sprintf("n%d", step), ServerAt(t, CurrentLevel)
		cli := c.Client()
		if len(added) > 0 {
			cli = added[len(added)-1].Client() // the first members may be gone by now
		}
		var add *clientv3.MemberAddResponse
		if err := retryUnhealthy(func() (err error) { add, err = cli.MemberAddAsLearner(Ctx(t), []string{n.PeerURL}); return err }); err != nil {
			t.Fatalf("step %d: member add: %v\n%s", step, err, p.Output())
		}
		var ic []string
		for _, m := range add.Members {
			name := m.Name
			if m.ID == add.Member.ID {
				name = n.Name
			}
			ic = append(ic, name+"="+m.PeerURLs[0])
		}
		n.InitialCluster = strings.Join(ic, ",")
		n.Extra = []string{"--initial-cluster-state", "existing"}
		n.Start()
		added = append(added, n)
		p.WaitOutput(fmt.Sprintf("ok: n%d took ", step), 2*time.Minute)
	}
	code, out := p.Wait(2 * time.Minute)
	if code != 0 {
		t.Fatalf("guide exit %d:\n%s", code, out)
	}
	for _, want := range []string{"now promotes n1", "now removes", "ok: cluster version 3.7, storage version 3.7 on every member.", "Done: the members' key-value stores agree"} {
		if !strings.Contains(out, want) {
			t.Errorf("guide output lacks %q:\n%s", want, out)
		}
	}
	list, err := added[2].Client().MemberList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name)
		if m.IsLearner {
			t.Errorf("%s is still a learner", m.Name)
		}
	}
	if strings.Join(names, ",") != "n1,n2,n3" && len(names) != 3 {
		t.Errorf("members after the replacement: %v", names)
	}
	for _, m := range c.Members {
		if m.Running() {
			t.Errorf("%s still runs after its removal", m.Name)
		}
	}
	if r, err := added[2].Client().Get(Ctx(t), "k/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || r.Count != 30 {
		t.Errorf("the data after the replacement: %v, %v", r, err)
	}
}

// TestFromDebian34ThroughOursTo37: a cluster of Debian's etcd 3.4.23 upgraded in place to 3.5
// (ours on two members, upstream 3.5.35 on the third), then to ours at 3.6 and 3.7, one member at
// a time. The 3.4 members take the 3.5 members as peers (they announce the minimum cluster
// version 3.0.0) and apply what they propose (at 3.5 a member's attributes and the cluster
// version go as v2 requests, as upstream 3.5's do); every version moves up, no member panics,
// and the data comes through.
func TestFromDebian34ThroughOursTo37(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 3)
	for _, m := range c.Members {
		m.Bin = Debian34Binary(t)
		m.Extra = nil // Debian's 3.4 has no --bcrypt-cost
	}
	c.Start()
	writeN(t, c.Client(), "deb", 20)
	swap := func(m *Member, bin string) {
		t.Helper()
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		m.Bin = bin
		m.Start()
	}
	swap(c.Members[0], ServerAt(t, OldestLevel))
	swap(c.Members[1], UpstreamBinaryAt(t, Upstream35Version, "etcd"))
	swap(c.Members[2], ServerAt(t, OldestLevel))
	c.WaitVersions("3.5.0", "", 30*time.Second)
	for _, level := range []string{LastReleaseLevel, CurrentLevel} {
		for _, m := range c.Members {
			swap(m, ServerAt(t, level))
		}
		c.WaitVersions(level+".0", level+".0", 30*time.Second)
	}
	r, err := c.Client().Get(Ctx(t), "deb/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 20 {
		t.Fatalf("the data after 3.4 -> 3.7: %v, %v", r, err)
	}
	for _, m := range c.Members {
		if m.LogHas("panic") {
			t.Errorf("%s panicked:\n%s", m.Name, m.LogTail(20))
		}
	}
}

// TestAssessAndRehearseFromDebian34: a cluster of Debian's etcd 3.4.23 with --enable-v2 and a v2
// key. Assess plans 3.4.23 -> 3.5.35 -> 3.6.16 -> 3.7.3, a snapshot on every member before 3.7 (the
// v2-entries blocker), and names the custom v2 content once a stopped member's data dir is given.
// The written plan (a snapshot on every member after the 3.5 hop and after the 3.6 hop) starts at
// debian-3.4.23 and runs green in containers (Debian's binary is dynamically linked: its image
// carries its loader and libc); without the snapshots, upstream 3.6.16 panics replaying 3.4's
// /health reads ("detected disallowed v2 WAL", method QGET).
func TestAssessAndRehearseFromDebian34(t *testing.T) {
	requireDocker(t)
	t.Parallel() // waits more than it computes; concurrent lab runs keep apart (own network, labels)
	c := NewCluster(t, 3)
	for _, m := range c.Members {
		m.Bin = Debian34Binary(t)
		m.Extra = []string{"--enable-v2=true"} // Debian's 3.4 has no --bcrypt-cost
	}
	c.Start()
	writeN(t, c.Client(), "k", 10)
	req, _ := http.NewRequest(http.MethodPut, c.Members[0].ClientURL+"/v2/keys/app/config", strings.NewReader("value=hello"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("a v2 write to 3.4: %v %v", resp, err)
	}

	planFile := filepath.Join(t.TempDir(), "path.yaml")
	code, a := assess(t, "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.7", "--plan-out", planFile)
	if code != 1 {
		t.Fatalf("assess: exit %d, want 1; findings:\n%s", code, a.findings())
	}
	var path []string
	for _, h := range a.Report.Path {
		path = append(path, h.Kind+" "+h.To)
	}
	if got := strings.Join(path, ", "); got != "upgrade 3.5.35, upgrade 3.6.16, upgrade 3.7.3" {
		t.Errorf("path from 3.4.23: %s", got)
	}
	a.has(t, "skipped-minor cluster block")
	a.has(t, "v2-entries cluster warn")
	b, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"start: debian-3.4.23", "version: upstream-3.5.35", "version: upstream-3.7.3"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the plan lacks %q:\n%s", want, b)
		}
	}
	if n := strings.Count(string(b), "snapshot: {}"); n != 2 {
		t.Errorf("the plan has %d snapshot steps, want 2 (before 3.6 and before 3.7):\n%s", n, b)
	}
	a.has(t, "v2-health-reads cluster warn")

	stopped := c.Members[2]
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	_, a = assess(t, "--endpoints", strings.Join(c.Endpoints()[:2], ","), "--data-dir", stopped.DataDir, "--to", "3.7")
	a.has(t, "v2-custom m3 block")

	work := t.TempDir()
	// One member: a snapshot at 3.5 takes 100,000 entries, and the lab writes them; docs/upgrade-readiness.md
	// has the three-member run.
	code, out := runTool(t, "upgradelab", "run", "--runtime", "container", "--plan", planFile, "--members", "1", "--workdir", work)
	if code != 0 {
		t.Fatalf("upgradelab run --plan %s: exit %d\n%s", planFile, code, out)
	}
	reps := readLabReport(t, filepath.Join(work, "report.json"))
	if len(reps) != 1 || !reps[0].Passed || reps[0].Members != 1 {
		t.Fatalf("rehearsal: %+v\n%s", reps, out)
	}
	if strings.Count(out, "every member saved a snapshot after") != 2 {
		t.Errorf("the run does not say the snapshot step's outcome:\n%s", out)
	}
}

// TestAssessFindsAPromotionUpstream3517Lost: on upstream 3.5.17 (one of 3.5.1-3.5.19,
// etcd-io/etcd#19557) a learner is added and promoted; the promotion reaches the v2 store only.
// Assess, given the stopped member's data dir, blocks the hop into 3.6 naming it, and plans the
// patch hop first. Copies of the data taken straight to 3.6 come up with every member a voter,
// under ours and under upstream 3.6.16 alike (both re-sync the flag from the v2 store at start).
// After the patch hop (3.5.35 on every member, which re-syncs the flag at start) the data dir
// reads clean, and upstream 3.6.16 takes every member as a voter.
func TestAssessFindsAPromotionUpstream3517Lost(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	affected := UpstreamBinaryAt(t, "v3.5.17", "etcd")
	// A snapshot every 20 entries: the promotion ends up behind one, so no release replays it
	// from the WAL and each reads the membership the database holds.
	c := NewCluster(t, 2, "--snapshot-count", "20") // with n2, three voters: one stopped leaves a quorum to assess
	m1 := c.Members[0]
	for _, m := range c.Members {
		m.Bin = affected
	}
	c.Start()
	writeN(t, c.Client(), "k", 10)

	n2 := NewMember(t)
	n2.Name, n2.Bin = "n2", affected
	c.WaitPeersSettled()
	var add *clientv3.MemberAddResponse
	if err := retryUnhealthy(func() (err error) { add, err = c.Client().MemberAddAsLearner(Ctx(t), []string{n2.PeerURL}); return err }); err != nil {
		t.Fatal(err)
	}
	var ic []string
	for _, m := range add.Members {
		name := m.Name
		if m.ID == add.Member.ID {
			name = n2.Name
		}
		ic = append(ic, name+"="+m.PeerURLs[0])
	}
	n2.InitialCluster = strings.Join(ic, ",")
	n2.Extra = append(n2.Extra, "--initial-cluster-state", "existing", "--snapshot-count", "20")
	n2.Start()
	ctx, cancel := context.WithTimeout(Ctx(t), 30*time.Second)
	defer cancel()
	waitFor(t, ctx, "the learner to be promoted", func() bool {
		_, err := c.Client().MemberPromote(Ctx(t), add.Member.ID)
		return err == nil
	})
	writeN(t, c.Client(), "after", 50)
	ctx, cancel = context.WithTimeout(Ctx(t), 10*time.Second)
	defer cancel()
	waitFor(t, ctx, "n2 to apply the writes", func() bool {
		r, err := n2.Client().Get(Ctx(t), "after/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
		return err == nil && r.Count == 50
	})
	if err := n2.Stop(); err != nil {
		t.Fatal(err)
	}

	planFile := filepath.Join(t.TempDir(), "path.yaml")
	code, a := assess(t, "--endpoints", m1.ClientURL, "--data-dir", n2.DataDir, "--to", "3.6", "--plan-out", planFile)
	if code != 1 {
		t.Fatalf("assess: exit %d, want 1; findings:\n%s", code, a.findings())
	}
	a.has(t, "learner-mismatch n2 block")
	a.has(t, "patch-below-leave m1 block")
	a.has(t, "patch-below-leave m2 block")
	if len(a.Report.Path) != 2 || a.Report.Path[0].Kind != "patch" || a.Report.Path[0].To != "3.5.35" {
		t.Errorf("path %+v, want the patch hop to 3.5.35 first", a.Report.Path)
	}
	for _, f := range a.Report.Findings {
		if f.Check == "learner-mismatch" && !strings.Contains(f.Summary, fmt.Sprintf("%x", add.Member.ID)) {
			t.Errorf("learner-mismatch does not name n2 (%x): %s", add.Member.ID, f.Summary)
		}
	}

	// The same data straight into 3.6, side by side, on copies of all three data dirs.
	all := append([]*Member{n2}, c.Members...)
	for _, m := range c.Members {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	learnersUnder := func(bin string) []string {
		t.Helper()
		orig := map[*Member]string{}
		for _, m := range all {
			orig[m] = m.DataDir
			cp := filepath.Join(t.TempDir(), "data")
			if out, err := exec.Command("cp", "-a", m.DataDir, cp).CombinedOutput(); err != nil {
				t.Fatalf("copy: %v\n%s", err, out)
			}
			m.DataDir, m.Bin = cp, bin
			if err := m.StartNoWait(); err != nil {
				t.Fatal(err)
			}
		}
		defer func() {
			for _, m := range all {
				m.Stop()
				m.DataDir = orig[m]
			}
		}()
		for _, m := range all {
			if err := m.WaitHealthy(30 * time.Second); err != nil {
				t.Fatalf("%s under %s: %v\n%s", m.Name, bin, err, m.LogTail(10))
			}
		}
		list, err := m1.Client().MemberList(Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		var learners []string
		for _, m := range list.Members {
			if m.IsLearner {
				learners = append(learners, m.Name)
			}
		}
		return learners
	}
	if l := learnersUnder(ServerAt(t, LastReleaseLevel)); len(l) != 0 {
		t.Errorf("ours at 3.6 on upstream 3.5.17's data lists %v as learners; n2 was promoted", l)
	}
	// 3.6.0's release candidates turned n2 back into a learner (etcd-io/etcd#19557); 3.6.0 and
	// later re-sync the flag from the v2 store at start (SyncLearnerPromotionIfNeeded), as ours does.
	if l := learnersUnder(UpstreamBinaryAt(t, Upstream36Version, "etcd")); len(l) != 0 {
		t.Errorf("upstream 3.6.16 on upstream 3.5.17's data lists %v as learners; n2 was promoted", l)
	}
	for _, m := range c.Members {
		m.Bin = affected
		if err := m.StartNoWait(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range c.Members {
		if err := m.WaitHealthy(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	}

	patched := UpstreamBinaryAt(t, Upstream35Version, "etcd")
	for _, m := range append([]*Member{n2}, c.Members...) {
		if m != n2 {
			if err := m.Stop(); err != nil {
				t.Fatal(err)
			}
		}
		m.Bin = patched
		m.Start()
	}
	if err := n2.Stop(); err != nil {
		t.Fatal(err)
	}
	_, a = assess(t, "--endpoints", m1.ClientURL, "--data-dir", n2.DataDir, "--to", "3.6")
	a.has(t, "learner-mismatch cluster ok")

	for _, m := range append([]*Member{n2}, c.Members...) {
		if m != n2 {
			if err := m.Stop(); err != nil {
				t.Fatal(err)
			}
		}
		m.Bin = UpstreamBinaryAt(t, Upstream36Version, "etcd")
		m.Start()
	}
	list, err := m1.Client().MemberList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if m.IsLearner {
			t.Errorf("upstream 3.6.16 lists %s as a learner after the patch hop", m.Name)
		}
	}
	work := t.TempDir() // the planned path itself, on upstream's releases
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--plan", planFile, "--members", "1", "--workdir", work)
	if code != 0 || !strings.Contains(out, "start 1 members at upstream-3.5.17") || !strings.Contains(out, "with upstream-3.6.16") {
		t.Fatalf("upgradelab run --plan %s: exit %d\n%s", planFile, code, out)
	}

}

// TestRehearseAStoppedMembersDataDirInContainers: the data dir of a stopped upstream 3.5.35
// member (read, never changed) is the rehearsal's source, in containers: every member starts from
// its database, the workload's writes take the data's shape (values, key prefixes), and the data
// comes through 3.5.35 -> ours at 3.6 unchanged.
func TestRehearseAStoppedMembersDataDirInContainers(t *testing.T) {
	requireDocker(t)
	t.Parallel() // waits more than it computes; concurrent lab runs keep apart (own network, labels)
	src := NewMember(t)
	src.Bin = UpstreamBinaryAt(t, Upstream35Version, "etcd")
	src.Start()
	cli := src.Client()
	for i, p := range []string{"/registry/pods", "/registry/pods", "/registry/configmaps", "/other"} {
		for j := 0; j < 10; j++ {
			if _, err := cli.Put(Ctx(t), fmt.Sprintf("%s/%d-%d", p, i, j), strings.Repeat("v", 200)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := src.Stop(); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, src.DataDir)

	planFile := filepath.Join(t.TempDir(), "up.yaml")
	if err := os.WriteFile(planFile, []byte(`name: up
members: 3
start: upstream-3.5.35
steps:
  - replace: {version: "3.6", order: leader-last}
  - expect: {cluster: "3.6", storage: "3.6", server: "3.6"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	code, out := runTool(t, "upgradelab", "run", "--runtime", "container", "--plan", planFile, "--from-snapshot", src.DataDir,
		"--binary", "3.6="+ServerAt(t, LastReleaseLevel), "--workdir", work)
	if code != 0 {
		t.Fatalf("upgradelab run --from-snapshot DATADIR: exit %d\n%s", code, out)
	}
	if treeHash(t, src.DataDir) != before {
		t.Error("the rehearsal changed the data dir it read")
	}
	reps, b := readRehearsalRuns(t, work)
	if len(reps) != 1 || !reps[0].Passed || reps[0].Rehearsal == nil || reps[0].Runtime != "container" {
		t.Fatalf("report: %s", b)
	}
	r := reps[0].Rehearsal
	if r.Shape.Keys != 40 || len(r.Shape.Prefixes) != 3 || r.Shape.Prefixes[0].Prefix != "/registry/pods" || r.Shape.Prefixes[0].Keys != 20 {
		t.Errorf("the restored data's shape: %+v", r.Shape)
	}
	if !strings.Contains(r.WorkloadShape, "values of 200 bytes, ledger keys spread over 3 prefixes") {
		t.Errorf("workload shape %q", r.WorkloadShape)
	}
	if !strings.Contains(r.DataIntact, "40 keys") {
		t.Errorf("data %q", r.DataIntact)
	}
}

// TestAssessAndRehearseFromUpstream364: a cluster of upstream 3.6.4, below the 3.6.11 every 3.6
// member must run before 3.7. Assess blocks the straight hop and plans 3.6.4 -> 3.6.16 -> 3.7.3,
// and the written plan runs green in the lab on upstream's own releases.
func TestAssessAndRehearseFromUpstream364(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	c := NewCluster(t, 1)
	c.Members[0].Bin = UpstreamBinaryAt(t, "v3.6.4", "etcd")
	c.Start()
	writeN(t, c.Client(), "k", 10)
	planFile := filepath.Join(t.TempDir(), "path.yaml")
	code, a := assess(t, "--endpoints", strings.Join(c.Endpoints(), ","), "--to", "3.7", "--plan-out", planFile)
	if code != 1 {
		t.Fatalf("assess: exit %d, want 1; findings:\n%s", code, a.findings())
	}
	a.has(t, "patch-below-leave m1 block")
	var path []string
	for _, h := range a.Report.Path {
		path = append(path, h.Kind+" "+h.To)
	}
	if got := strings.Join(path, ", "); got != "patch 3.6.16, upgrade 3.7.3" {
		t.Errorf("path from 3.6.4: %s", got)
	}
	work := t.TempDir()
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--plan", planFile, "--workdir", work)
	if code != 0 {
		t.Fatalf("upgradelab run --plan %s: exit %d\n%s", planFile, code, out)
	}
	if reps := readLabReport(t, filepath.Join(work, "report.json")); len(reps) != 1 || !reps[0].Passed {
		t.Fatalf("rehearsal: %+v\n%s", reps, out)
	}
	if !strings.Contains(out, "start 1 members at upstream-3.6.4") || !strings.Contains(out, "with upstream-3.7.3") {
		t.Errorf("the run is not the planned path:\n%s", out)
	}
}

// TestRehearseARollingReplacementJoiningBySnapshot: an upstream 3.6.16 cluster with 16 MiB of
// data (its leader has taken a snapshot and compacted its log) replaced member by member with
// learners at 3.7, ours and upstream 3.7.3 alternating: each new member catches up from a database
// snapshot sent by a leader of the other implementation or its own, is promoted, and an old
// member is removed, under load, with every check of the lab.
func TestRehearseARollingReplacementJoiningBySnapshot(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	planFile := filepath.Join(t.TempDir(), "replace.yaml")
	if err := os.WriteFile(planFile, []byte(`name: replace-by-snapshot
members: 3
start: upstream-3.6.16
steps:
  - add: {version: "3.7", learner: true}
  - promote: m4
  - remove: m1
  - add: {version: upstream-3.7.3, learner: true}
  - promote: m5
  - remove: m2
  - add: {version: "3.7", learner: true}
  - promote: m6
  - remove: m3
  - expect: {cluster: "3.7", storage: "3.7", server: "3.7"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	code, out := runTool(t, "upgradelab", "run", "--runtime", "process", "--plan", planFile, "--preload", "16MiB",
		"--bin-dir", filepath.Dir(Binary(t, "etcd")), "--workdir", work)
	if code != 0 {
		t.Fatalf("upgradelab run: exit %d\n%s", code, out)
	}
	logs, _ := filepath.Glob(filepath.Join(work, "replace-by-snapshot-*", "m*.log"))
	read := func(name string) string {
		for _, l := range logs {
			if filepath.Base(l) == name+".log" {
				b, _ := os.ReadFile(l)
				return string(b)
			}
		}
		t.Fatalf("no log of %s among %v", name, logs)
		return ""
	}
	for name, line := range map[string]string{"m4": "received database snapshot from leader", "m5": "received and saved database snapshot",
		"m6": "received database snapshot from leader"} {
		if !strings.Contains(read(name), line) {
			t.Errorf("%s did not catch up from a database snapshot (no %q in its log)", name, line)
		}
	}
}
