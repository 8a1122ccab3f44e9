package conformance

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

var (
	// a subtest's result one level below the top: "    --- PASS: TestX/Scenario/Name (12.3s)"
	scenarioResult = regexp.MustCompile(`^    --- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)
	// where go test's -v output says whose lines follow
	testContext = regexp.MustCompile(`^=== (?:RUN|CONT|NAME)\s+(\S+)`)
	// upstream's robustness log when it injects: Triggering failpoint {"failpoint": "KillFailpoint"}
	triggering = regexp.MustCompile(`Triggering failpoint\s+\{"failpoint": "([^"]+)"`)
)

// parseScenarios reads the -test.v output of one top-level test whose subtests are scenarios
// (upstream's robustness tests) and returns one Result per scenario that ended, named
// test/scenario with suffix (" #2" for a test's second run) appended: its status and time, the
// failpoint it injected, its failed subtests and, for a failure, the first line a _test.go file
// of the suite logged in it.
func parseScenarios(r io.Reader, test, suffix string) []Result {
	type section struct {
		failpoint, firstError string
	}
	sections := map[string]*section{} // by the subtest's full name
	var order []Result
	var current string
	top, _, _ := strings.Cut(test, "/") // test may name one scenario
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if m := testContext.FindStringSubmatch(l); m != nil {
			current = m[1]
			if sections[current] == nil {
				sections[current] = &section{}
			}
			continue
		}
		if m := scenarioResult.FindStringSubmatch(l); m != nil && strings.HasPrefix(m[2], top+"/") {
			res := Result{Test: m[2], Status: strings.ToLower(m[1])}
			fmt.Sscan(m[3], &res.Seconds)
			order = append(order, res)
			continue
		}
		if m := subFailed.FindStringSubmatch(l); m != nil {
			for i := range order {
				if strings.HasPrefix(m[1], order[i].Test+"/") {
					order[i].Failed = append(order[i].Failed, m[1])
				}
			}
			continue
		}
		s := sections[current]
		if s == nil {
			continue
		}
		if m := triggering.FindStringSubmatch(l); m != nil && s.failpoint == "" {
			s.failpoint = m[1]
		}
		if t := strings.Join(strings.Fields(l), " "); s.firstError == "" && strings.Contains(t, "_test.go:") {
			s.firstError = t
		}
	}
	// A scenario's lines are its own section's and its subtests'.
	for i := range order {
		res := &order[i]
		for name, s := range sections {
			if name != res.Test && !strings.HasPrefix(name, res.Test+"/") {
				continue
			}
			if s.failpoint != "" {
				res.Failpoint = s.failpoint
			}
			if res.Status == "fail" && res.Reason == "" && s.firstError != "" {
				res.Reason = s.firstError
			}
		}
		if len(res.Reason) > 300 {
			res.Reason = res.Reason[:300] + "..."
		}
		res.Test += suffix
	}
	return order
}
