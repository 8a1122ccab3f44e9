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
}

// Options say how tests run.
type Options struct {
	Timeout  time.Duration // per test
	Parallel int           // tests at once; above 1 each runs in a network namespace of its own
	LogDir   string        // each test's output: LogDir/<side>/<test>.log
	Args     []string      // more arguments for the test binary
	// Progress, when set, hears each result as it comes.
	Progress func(side string, r Result)
}

// Isolated says whether tests can run in network namespaces of their own here (unshare and
// ip, and the right to make namespaces). Without them tests must run one at a time: every
// upstream test listens on the same ports.
func Isolated() bool {
	return exec.Command("unshare", "--net", "--", "ip", "link", "set", "lo", "up").Run() == nil
}

// Run runs every test on every side, alternating sides test by test so both meet the same
// machine, and returns each side's results in the order of tests.
func Run(ctx context.Context, s *Suite, tests []string, sides []Side, o Options) (map[string][]Result, error) {
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	isolate := o.Parallel > 1
	if isolate && !Isolated() {
		return nil, errors.New("running tests at once needs network namespaces (unshare --net), which this machine refuses: use one at a time")
	}
	type job struct {
		side Side
		i    int
	}
	jobs := make(chan job)
	out := map[string][]Result{}
	for _, sd := range sides {
		out[sd.Name] = make([]Result, len(tests))
		if err := os.MkdirAll(filepath.Join(o.LogDir, sd.Name), 0o755); err != nil {
			return nil, err
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range o.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r := runOne(ctx, s, tests[j.i], j.side, o, isolate)
				mu.Lock()
				out[j.side.Name][j.i] = r
				if o.Progress != nil {
					o.Progress(j.side.Name, r)
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
	return out, ctx.Err()
}

var (
	topResult = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)
	subFailed = regexp.MustCompile(`^\s+--- FAIL: (\S+)`)
)

// runOne runs one test in a process of its own and reads how it ended from its -test.v output.
func runOne(ctx context.Context, s *Suite, test string, sd Side, o Options, isolate bool) Result {
	args := append([]string{"-test.run", "^" + test + "$", "-test.v", "-test.count", "1",
		"-test.timeout", o.Timeout.String(), "-bin-dir", sd.BinDir}, o.Args...)
	name, argv := s.Binary, args
	if isolate {
		// A fresh network namespace with only loopback, brought up: the test's ports are its own.
		name, argv = "unshare", append([]string{"--net", "--", "sh", "-c", `ip link set lo up && exec "$0" "$@"`, s.Binary}, args...)
	}
	// The binary's own timeout ends a stuck test with a goroutine dump; this one is the backstop.
	cctx, cancel := context.WithTimeout(ctx, o.Timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, name, argv...)
	cmd.Dir = s.Dir
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
	logPath := filepath.Join(o.LogDir, sd.Name, test+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return Result{Test: test, Status: "fail", Reason: err.Error()}
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	start := time.Now()
	runErr := cmd.Run()
	r := Result{Test: test, Seconds: time.Since(start).Seconds()}
	if _, err := f.Seek(0, 0); err != nil {
		r.Status, r.Reason = "fail", err.Error()
		return r
	}
	parse(f, &r)
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
	return r
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
