package conformance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Side is one set of binaries the tests run against: a directory laid out as upstream's tests
// expect (etcd, etcdctl, etcdutl, etcd-last-release).
type Side struct {
	Name   string // "ours", "upstream"
	BinDir string
}

// Result is how one test ended on one side.
type Result struct {
	Test    string   `json:"test"`
	Status  string   `json:"status"` // pass, fail, skip, timeout
	Seconds float64  `json:"seconds"`
	Failed  []string `json:"failed,omitempty"` // the subtests that failed
	Reason  string   `json:"reason,omitempty"` // a skip's reason, or a failure's first line
	// Failpoint is the failpoint a robustness scenario injected (its log's "Triggering
	// failpoint"), where it got that far.
	Failpoint string `json:"failpoint,omitempty"`
}

// Options say how tests run.
type Options struct {
	Timeout  time.Duration // per test
	Parallel int           // tests at once; above 1 each runs in a network namespace of its own
	Isolate  bool          // a namespace of its own for each test even one at a time
	LogDir   string        // each test's output: LogDir/<side>/<test>.log
	Args     []string      // more arguments for the test binary
	// Scenarios makes a test's results those of its subtests one level down, one Result each
	// (upstream's robustness tests: one top-level test runs every scenario), named with the
	// run's number where a test is in the list more than once.
	Scenarios bool
	Env       []string // more environment for the test binary
	// Progress, when set, hears each result as it comes.
	Progress func(side string, r Result)
}

// Isolated says whether tests can run in network namespaces of their own here (unshare and
// ip, and the right to make namespaces). Without them tests must run one at a time: every
// upstream test listens on the same ports.
func Isolated() bool {
	return exec.Command("unshare", "--net", "--pid", "--fork", "--", "ip", "link", "set", "lo", "up").Run() == nil
}

// Run runs every test on every side, alternating sides test by test so both meet the same
// machine, and returns each side's results in the order of tests.
func Run(ctx context.Context, s *Suite, tests []string, sides []Side, o Options) (map[string][]Result, error) {
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	isolate := o.Parallel > 1 || o.Isolate
	if isolate && !Isolated() {
		return nil, errors.New("running tests at once needs network namespaces (unshare --net), which this machine refuses: use one at a time")
	}
	type job struct {
		side Side
		i    int
	}
	jobs := make(chan job)
	byJob := map[string][][]Result{}
	for _, sd := range sides {
		byJob[sd.Name] = make([][]Result, len(tests))
		if err := os.MkdirAll(filepath.Join(o.LogDir, sd.Name), 0o755); err != nil {
			return nil, err
		}
	}
	names := runNames(tests)
	removeLeftoverDataDirs(s.Dir)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range o.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				rs := runOne(ctx, s, tests[j.i], names[j.i], j.side, o, isolate)
				mu.Lock()
				byJob[j.side.Name][j.i] = rs
				if o.Progress != nil {
					for _, r := range rs {
						o.Progress(j.side.Name, r)
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := range tests {
		for _, sd := range sides {
			select {
			case jobs <- job{sd, i}:
			case <-ctx.Done():
			}
		}
	}
	close(jobs)
	wg.Wait()
	out := map[string][]Result{}
	for side, rss := range byJob {
		for _, rs := range rss {
			out[side] = append(out[side], rs...)
		}
	}
	return out, ctx.Err()
}

// runNames names each run of tests: the test's name, with " #N" from its second run on where
// the list holds it more than once.
func runNames(tests []string) []string {
	seen := map[string]int{}
	names := make([]string, len(tests))
	for i, t := range tests {
		seen[t]++
		names[i] = t
		if seen[t] > 1 {
			names[i] = fmt.Sprintf("%s #%d", t, seen[t])
		}
	}
	return names
}

var (
	topResult = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)
	subFailed = regexp.MustCompile(`^\s+--- FAIL: (\S+)`)
)

// runOne runs one test in a process of its own and reads how it ended from its -test.v output:
// one Result, or with o.Scenarios one per scenario.
func runOne(ctx context.Context, s *Suite, test, name string, sd Side, o Options, isolate bool) []Result {
	args := append([]string{"-test.run", "^" + test + "$", "-test.v", "-test.count", "1",
		"-test.timeout", o.Timeout.String(), "-bin-dir", sd.BinDir}, o.Args...)
	prog, argv := s.Binary, args
	if isolate {
		// A fresh network namespace with only loopback, brought up: the test's ports are its own.
		// And a PID namespace whose first process is the test: when it ends, the kernel ends
		// every process it left (members started through a terminal get sessions of their own,
		// which the process group below does not reach, and would hold ports and data dirs).
		prog, argv = "unshare", append([]string{"--net", "--pid", "--fork", "--", "sh", "-c", `ip link set lo up && exec "$0" "$@"`, s.Binary}, args...)
	}
	// The binary's own timeout ends a stuck test with a goroutine dump; this one is the backstop.
	cctx, cancel := context.WithTimeout(ctx, o.Timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, prog, argv...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.WaitDelay = 10 * time.Second
	// A group of its own: a test that times out or panics leaves its etcd processes behind, and
	// they go with it (the next test would find its ports taken, or a stray member).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	defer func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	logPath := filepath.Join(o.LogDir, sd.Name, strings.NewReplacer(" #", ".", "/", "_").Replace(name)+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return []Result{{Test: name, Status: "fail", Reason: err.Error()}}
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	start := time.Now()
	runErr := cmd.Run()
	r := Result{Test: test, Seconds: time.Since(start).Seconds()}
	if _, err := f.Seek(0, 0); err != nil {
		r.Status, r.Reason = "fail", err.Error()
		r.Test = name
		return []Result{r}
	}
	var scenarios []Result
	if o.Scenarios {
		scenarios = parseScenarios(f, test, strings.TrimPrefix(name, test))
		if _, err := f.Seek(0, 0); err != nil {
			r.Status, r.Reason = "fail", err.Error()
		}
	}
	parse(f, &r)
	r.Test = name
	switch {
	case r.Status != "":
	case cctx.Err() != nil:
		r.Status, r.Reason = "timeout", fmt.Sprintf("still running after %v", o.Timeout+time.Minute)
	default:
		r.Status = "fail"
		if r.Reason == "" && runErr != nil {
			r.Reason = runErr.Error()
		}
	}
	if o.Scenarios && len(scenarios) > 0 && r.Status != "timeout" {
		return scenarios
	}
	// No scenario ended (the test failed before its first, or timed out): the test's own
	// result, with the scenarios that did end.
	return append(scenarios, r)
}

// parse reads a test's -test.v output: its top-level result line, the subtests that failed, a
// panic for its own timeout, and what it logged last before ending (testify's "Error:" line and
// the one after it where it has one, else its last log line).
func parse(f *os.File, r *Result) {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lastLog, firstError string
	takeNext := false
	for sc.Scan() {
		l := sc.Text()
		t := strings.Join(strings.Fields(l), " ")
		if takeNext {
			firstError += " " + t
			takeNext = false
		}
		switch m := topResult.FindStringSubmatch(l); {
		case m != nil && m[2] == r.Test:
			r.Status = strings.ToLower(m[1])
			fmt.Sscan(m[3], &r.Seconds)
		case subFailed.MatchString(l):
			r.Failed = append(r.Failed, subFailed.FindStringSubmatch(l)[1])
		case strings.HasPrefix(l, "panic: test timed out"):
			r.Status, r.Reason = "timeout", strings.TrimPrefix(l, "panic: ")
			return
		case firstError == "" && strings.HasPrefix(t, "Error: "):
			firstError = t
			takeNext = true
		case strings.HasPrefix(l, "    ") && strings.Contains(t, "_test.go:"):
			lastLog = t // the test's own lines, not the framework's logger.go
		}
	}
	switch {
	case r.Status == "pass":
	case r.Status == "fail" && firstError != "":
		r.Reason = firstError
	default:
		r.Reason = lastLog
	}
	if len(r.Reason) > 300 {
		r.Reason = r.Reason[:300] + "..."
	}
}

// removeLeftoverDataDirs removes the default data dirs ("NAME.etcd") upstream's tests that use
// one leave in the package directory they run in, so an earlier run's files do not meet this
// one's members.
func removeLeftoverDataDirs(dir string) {
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*.etcd"))
	for _, d := range leftovers {
		os.RemoveAll(d)
	}
}
