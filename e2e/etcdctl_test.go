package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// ctl runs an etcdctl binary and returns its exit status and combined output.
func ctl(t *testing.T, bin string, stdin string, args ...string) (int, string) {
	t.Helper()
	return ctlEnv(t, bin, nil, stdin, args...)
}

// ctlEnv is ctl with variables added to the environment.
func ctlEnv(t *testing.T, bin string, env []string, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// Values that legitimately differ between two runs: timings, client log lines, binary versions.
var volatile = []*regexp.Regexp{
	regexp.MustCompile(`took = [0-9.]+[µnm]?s`),
	regexp.MustCompile(`"took":"[0-9.]+[µnm]?s"`),
	regexp.MustCompile(`took [0-9.]+[µnm]?s`),
	regexp.MustCompile(`(?m)^\{"level":.*$\n?`),
	regexp.MustCompile(`etcdctl version: .*`),
	regexp.MustCompile(`"raft_term":\d+`),
	regexp.MustCompile(`"RaftTerm" : \d+`),
}

// A timing inside a table also changes the column's width: table lines are compared with their
// padding collapsed.
// (Upstream 3.7 draws tables with box-drawing characters, earlier lines in ASCII.)
var (
	tableTiming  = regexp.MustCompile(`([|│]) +[0-9.]+[µnm]?s +([|│])`)
	tablePadding = regexp.MustCompile(` +|-+|─+`)
)

func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

func normalize(s string) string {
	for _, re := range volatile {
		s = re.ReplaceAllString(s, "<volatile>")
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.ContainsAny(l[:min(len(l), 3)], "|+│┌├└") {
			l = tableTiming.ReplaceAllString(l, "$1 <volatile> $2")
			lines[i] = tablePadding.ReplaceAllStringFunc(l, func(m string) string { r, _ := utf8.DecodeRuneInString(m); return string(r) })
		}
	}
	return strings.Join(lines, "\n")
}

// The same command list through our etcdctl and upstream's against one server: identical output
// and exit status, except for timings. Writes run once per binary on keys of their own.
func TestEtcdctlMatchesUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	etcdctlAsUpstream(t, CurrentLevel, Upstream37Version, true)
}

// TestEtcdctlAtOlderLevelsMatchesUpstream is the same comparison at 3.6 and 3.5 (ours at that
// level, upstream's etcdctl of that line, on a cluster of ours at that level), without the
// long-running commands and the minute of check perf.
func TestEtcdctlAtOlderLevelsMatchesUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, c := range []struct{ level, upstream string }{{LastReleaseLevel, Upstream36Version}, {OldestLevel, Upstream35Version}} {
		t.Run(c.level, func(t *testing.T) { etcdctlAsUpstream(t, c.level, c.upstream, false) })
	}
}

// etcdctlAsUpstream runs the command list through upstream's etcdctl of a line and ours at that
// level, on a cluster of ours at that level; full adds the watches, locks and elections and a
// whole check perf.
func etcdctlAsUpstream(t *testing.T, level, upstream string, full bool) {
	up := UpstreamBinaryAt(t, upstream, "etcdctl")
	ours := ToolAt(t, level, "etcdctl")
	c := NewCluster(t, 3)
	for _, m := range c.Members {
		m.Bin = ServerAt(t, level)
	}
	c.Start()
	ep := "--endpoints=" + c.Members[0].ClientURL
	all := "--endpoints=" + strings.Join(c.Endpoints(), ",")
	snapPath := filepath.Join(t.TempDir(), "snapshot.db")

	type step struct {
		stdin string
		args  []string
	}
	steps := func(p string) []step {
		perf := step{"", []string{ep, "check", "perf"}}
		if !full {
			perf = step{"", []string{ep, "check", "perf", "--load", "s", "--prefix"}} // a flag error, not the minute-long check
		}
		return []step{
			{"", []string{ep, "put", p + "/a", "1"}},
			{"", []string{ep, "put", p + "/b", "2", "--prev-kv"}},
			{"value from stdin", []string{ep, "put", p + "/c"}},
			{"", []string{ep, "put", p + "/b", "3", "--prev-kv"}},
			{"", []string{ep, "put", p + "/b", "--ignore-value"}},
			{"", []string{ep, "get", p + "/", "--prefix"}},
			{"", []string{ep, "get", p + "/", "--prefix", "--keys-only"}},
			{"", []string{ep, "get", p + "/", "--prefix", "--print-value-only"}},
			{"", []string{ep, "get", p + "/", "--prefix", "--sort-by=VALUE", "--order=DESCEND", "--limit=2"}},
			{"", []string{ep, "get", p + "/zz"}},
			{"", []string{ep, "get", p + "/", "--prefix", "-w", "json"}},
			{"", []string{ep, "get", p + "/", "--prefix", "-w", "protobuf"}},
			{"", []string{ep, "put", p + "/j", "v", "--prev-kv", "-w", "fields"}},
			{"", []string{ep, "put", p + "/j", "w", "--prev-kv", "-w", "json"}},
			{"", []string{ep, "del", p + "/j", "--prev-kv", "-w", "fields"}},
			{"", []string{ep, "compaction", "3", "-w", "json"}},
			{"", []string{ep, "get", p + "/a", "--rev", "2"}},
			{"", []string{ep, "get", p + "/", "--prefix", "--count-only", "-w", "fields"}},
			{"", []string{ep, "get", p + "/", "--prefix", "--sort-by=BOGUS"}},
			{"", []string{ep, "get", p + "/", "--prefix", "--from-key"}},
			{"", []string{ep, "get"}},
			{"", []string{ep, "put"}},
			{"", []string{ep, "put", "k", "v", "--lease", "zz"}},
			{"mod(\"" + p + "/a\") > \"0\"\n\nput " + p + "/a \"overwrote a\"\nget " + p + "/ --prefix\n\nput " + p + "/x created\n", []string{ep, "txn"}},
			{"value(\"" + p + "/a\") = \"nope\"\nver(\"" + p + "/b\") > \"1\"\n\nput " + p + "/y y\n\ndel " + p + "/b --prev-kv\nput " + p + "/z 'single quoted'\n\n", []string{ep, "txn", "-i", "-w", "json"}},
			{"c(\"" + p + "/a\") > \"0\"\n\nget " + p + "/a\n\n\n", []string{ep, "txn", "-w", "fields"}},
			{"bogus(\"k\") = \"v\"\n\n\n\n", []string{ep, "txn"}},
			{"mod(\"k\") > \"0\"\n\nfrobnicate k\n\n\n", []string{ep, "txn"}},
			{"mod(\"k\") > \"0\"\n", []string{ep, "txn"}},
			{"", []string{ep, "txn", "extra"}},
			{"", []string{ep, "del", p + "/c", "--prev-kv"}},
			{"", []string{ep, "del", p + "/", "--prefix"}},
			{"", []string{ep, "del"}},
			{"", []string{ep, "lease", "grant"}},
			{"", []string{ep, "lease", "grant", "abc"}},
			{"", []string{ep, "lease", "timetolive", "zz"}},
			{"", []string{ep, "lease", "revoke"}},
			{"", []string{ep, "alarm", "list"}},
			{"", []string{ep, "alarm", "list", "extra"}},
			{"", []string{all, "endpoint", "health"}},
			{"", []string{all, "endpoint", "health", "-w", "table"}},
			{"", []string{ep, "member", "list", "-w", "table"}},
			{"", []string{ep, "member", "add"}},
			{"", []string{ep, "member", "add", "x", "http://127.0.0.1:1"}},
			{"", []string{ep, "member", "remove", "nothex"}},
			{"", []string{ep, "move-leader"}},
			{"", []string{ep, "downgrade", "validate", "3.4"}},
			{"", []string{ep, "downgrade", "validate"}},
			{"", []string{ep, "downgrade", "cancel"}},
			{"", []string{ep, "snapshot", "save"}},
			{"", []string{ep, "snapshot", "save", snapPath}},
			{"", []string{"snapshot", "save", snapPath, ep}},
			{"", []string{ep, "defrag"}},
			{"", []string{"defrag", ep, "--command-timeout=30s"}},
			{"", []string{ep, "get", "x", "-w", "xml"}},
			{"", []string{ep, "member", "add", "y", "--peer-urls=http://127.0.0.1:1", "-w", "table"}},
			{"", []string{"version"}},
			{"", []string{ep, "watch"}},
			{"", []string{ep, "watch", "a", "--"}},
			{"", []string{ep, "watch", "a", "b", "--prefix"}},
			{"", []string{ep, "lock"}},
			{"", []string{ep, "elect"}},
			{"", []string{ep, "elect", "x"}},
			{"", []string{ep, "elect", "-l", "x", "y"}},
			{"", []string{ep, "check", "perf", "--load", "bogus"}},
			{"", []string{ep, "put", "/etcdctl-check-perf/x", "v"}},
			perf,
			{"", []string{ep, "del", "/etcdctl-check-perf/x"}},
		}
	}
	// Commands that keep running (watch, lock, elect): each is started, given its input, left until
	// its output settles, then interrupted (or left to exit by itself).
	type stream struct {
		env        []string
		args       []string
		stdin      string
		closeStdin bool
		interrupt  bool
		leaseKeys  bool // lock and election keys end in a lease ID, which is not the same across runs
		unordered  bool // several watches print concurrently
	}
	streams := func(p string) []stream {
		if !full {
			return nil
		}
		return []stream{
			{args: []string{ep, "watch", p + "/", "--prefix", "--rev", "4", "--prev-kv"}, interrupt: true},
			{args: []string{ep, "watch", p + "/", "--prefix", "--rev", "4", "-w", "json"}, interrupt: true},
			{args: []string{ep, "watch", p + "/", "--prefix", "--rev", "4", "-w", "fields"}, interrupt: true},
			{args: []string{ep, "watch", p + "/", "--prefix", "--rev", "4", "-w", "protobuf"}, interrupt: true},
			{args: []string{ep, "watch", p + "/", "--prefix", "--rev", "4", "-w", "table"}, interrupt: true},
			{args: []string{ep, "watch", p + "/a", "--rev", "1"}},
			{args: []string{ep, "watch", "--rev", "4", p + "/b", "--", "sh", "-c",
				`echo "$ETCD_WATCH_EVENT_TYPE $ETCD_WATCH_KEY $ETCD_WATCH_VALUE $ETCD_WATCH_REVISION"`}, interrupt: true},
			{env: []string{"ETCDCTL_WATCH_KEY=" + p + "/", "ETCDCTL_WATCH_RANGE_END=" + p + "0"}, args: []string{ep, "watch", "--rev", "4"}, interrupt: true},
			{env: []string{"ETCDCTL_WATCH_KEY=" + p + "/a"}, args: []string{ep, "watch", p + "/a"}},
			{env: []string{"ETCDCTL_WATCH_RANGE_END=" + p + "/z"}, args: []string{ep, "watch"}},
			{args: []string{ep, "watch", "-i"}, stdin: "watch --rev 4 " + p + "/b --prev-kv\nfrobnicate\nwatch\nwatch --rev 4 " + p + "/c\n",
				closeStdin: true, unordered: true},
			{args: []string{ep, "lock", p + "/lock"}, interrupt: true, leaseKeys: true},
			{args: []string{ep, "lock", "--ttl", "5", p + "/lock", "--", "sh", "-c", `echo "$ETCD_LOCK_KEY" rev=$ETCD_LOCK_REV; exit 3`}, leaseKeys: true},
			{args: []string{ep, "elect", p + "/el", "me"}, interrupt: true, leaseKeys: true},
			{args: []string{ep, "elect", "-l", p + "/el"}, interrupt: true},
		}
	}
	// The lease ID is printed with %x: up to 16 hex digits, fewer with leading zeros.
	leaseKey := regexp.MustCompile(`(p/(lock|el))/[0-9a-f]{1,16}\b`)
	runStream := func(bin string, st stream) (int, string) {
		proc := StartCtl(t, bin, st.env, st.args...)
		proc.Send(st.stdin)
		proc.Settle(700*time.Millisecond, 10*time.Second)
		if st.closeStdin {
			proc.CloseStdin()
		}
		if st.interrupt {
			proc.Signal(os.Interrupt)
		}
		code, out := proc.Wait(15 * time.Second)
		out = normalize(out)
		if st.leaseKeys {
			out = leaseKey.ReplaceAllString(out, "$1/<lease>")
		}
		if st.unordered {
			out = sortedLines(out)
		}
		return code, out
	}
	// Each binary runs the list on a fresh cluster with the same names, ports and token, so IDs and
	// revisions match too; only raft terms (election timing) may differ.
	runAll := func(bin string) (codes []int, outs []string) {
		for _, st := range steps("p") {
			code, out := ctl(t, bin, st.stdin, st.args...)
			// A voter is added only once every voter has been connected for upstream's health
			// interval (5 s), which the steps may reach sooner after the cluster started: the
			// refusal changes nothing, so the step is tried again until the check passes.
			for deadline := time.Now().Add(20 * time.Second); strings.Contains(out, "etcdserver: unhealthy cluster") &&
				slices.Contains(st.args, "add") && time.Now().Before(deadline); {
				time.Sleep(500 * time.Millisecond)
				code, out = ctl(t, bin, st.stdin, st.args...)
			}
			codes, outs = append(codes, code), append(outs, normalize(out))
		}
		for _, st := range streams("p") {
			code, out := runStream(bin, st)
			codes, outs = append(codes, code), append(outs, out)
		}
		return codes, outs
	}
	ucodes, uouts := runAll(up)
	for _, m := range c.Members {
		m.Kill()
		if err := os.RemoveAll(m.DataDir); err != nil {
			t.Fatal(err)
		}
	}
	c.Start()
	ocodes, oouts := runAll(ours)
	every := steps("p")
	for _, st := range streams("p") {
		every = append(every, step{st.stdin, st.args})
	}
	for i, st := range every {
		uout, oout := uouts[i], oouts[i]
		if slices.Contains(st.args, "health") {
			// upstream prints endpoints in the order their checks finish
			uout, oout = sortedLines(uout), sortedLines(oout)
		}
		if ucodes[i] != ocodes[i] || uout != oout {
			t.Errorf("etcdctl %s\n--- upstream (exit %d) ---\n%s--- ours (exit %d) ---\n%s", strings.Join(st.args, " "), ucodes[i], uout, ocodes[i], oout)
		}
	}

	// Read-only commands on shared state: the same answer from both.
	if code, out := ctl(t, ours, "", ep, "put", "shared", "value"); code != 0 {
		t.Fatal(out)
	}
	for _, args := range [][]string{
		{ep, "member", "list"}, {ep, "member", "list", "-w", "json"}, {ep, "member", "list", "-w", "fields"},
		{ep, "member", "list", "--consistency=s"}, {all, "endpoint", "hashkv"},
		{all, "endpoint", "hashkv", "-w", "table"}, {ep, "endpoint", "hashkv", "--cluster", "-w", "json"},
		{ep, "lease", "list"}, {ep, "get", "shared", "--hex"}, {ep, "get", "shared", "-w", "json"},
	} {
		ucode, uout := ctl(t, up, "", args...)
		ocode, oout := ctl(t, ours, "", args...)
		if ucode != ocode || normalize(uout) != normalize(oout) {
			t.Errorf("etcdctl %s\n--- upstream (exit %d) ---\n%s--- ours (exit %d) ---\n%s", strings.Join(args, " "), ucode, uout, ocode, oout)
		}
	}
}

// Exit statuses and messages of failing command lines (TestCLIErrorsMatchUpstream compares them
// with upstream's); the --user and ETCDCTL_* refusals are ours.
func TestEtcdctlErrors(t *testing.T) {
	ours := Binary(t, "etcdctl")
	m := NewMember(t)
	m.Start()
	ep := "--endpoints=" + m.ClientURL
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{ep, "get", "--bogus", "k"}, 1, "unknown flag: --bogus"},
		{[]string{ep, "bogus"}, 1, `unknown command "bogus"`},
		{[]string{ep, "--dial-timeout=abc", "get", "k"}, 1, "dial-timeout"},
		{[]string{"--endpoints=127.0.0.1:1", "--dial-timeout=300ms", "--command-timeout=1s", "get", "k"}, 1, "context deadline exceeded"},
		{[]string{ep, "get"}, 128, "get command needs one argument"},
		{[]string{ep, "--command-timeout=1ns", "get", "k"}, 1, "deadline exceeded"},
		{[]string{ep, "get", "k", "-w", "xml"}, 4, "unsupported output format"},
		{[]string{ep, "--user=bob", "get", "k"}, 1, "--user bob has no password"},
	} {
		code, out := ctl(t, ours, "", c.args...)
		if code != c.code || !regexp.MustCompile(`(?m)^Error: .*`+regexp.QuoteMeta(c.msg)).MatchString(out) {
			t.Errorf("etcdctl %v: exit %d, %q; want exit %d and %q after \"Error: \"", c.args, code, out, c.code, c.msg)
		}
	}
	// ETCDCTL_* variables set global flags; the command line wins over them.
	cmd := exec.Command(ours, "put", "envkey", "v")
	cmd.Env = append(cmd.Environ(), "ETCDCTL_ENDPOINTS="+m.ClientURL, "ETCDCTL_API=3")
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("ETCDCTL_ENDPOINTS: %v %s", err, out)
	}
	cmd = exec.Command(ours, ep, "get", "envkey", "--print-value-only")
	cmd.Env = append(cmd.Environ(), "ETCDCTL_ENDPOINTS=127.0.0.1:1")
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "v" {
		t.Fatalf("flag over variable: %v %s", err, out)
	}
	cmd = exec.Command(ours, "get", "envkey")
	cmd.Env = append(cmd.Environ(), "ETCDCTL_ENDPOINTS="+m.ClientURL, "ETCDCTL_COMMAND_TIMEOUT=bogus")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "ETCDCTL_COMMAND_TIMEOUT") {
		t.Fatalf("bad variable: %v %s", err, out)
	}
}
