package report

import (
	"encoding/xml"
	"fmt"
	"sort"
	"strings"

	"etcdx/upgradelab/lab"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      float64     `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Subject names what a run ran: its binaries' subjects and versions, sorted.
func Subject(r lab.Report) string {
	var parts []string
	for s, b := range r.Binaries {
		if b.Version != "" && b.Version != s {
			parts = append(parts, s+"@"+b.Version)
		} else {
			parts = append(parts, s)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// JUnit renders the runs as JUnit XML: a suite per plan, a test case per plan x size x
// subject (and seed), failed with the run's failure, its steps as output.
func JUnit(reports []lab.Report) ([]byte, error) {
	all := junitSuites{Name: "upgradelab"}
	index := map[string]int{}
	for _, r := range reports {
		i, ok := index[r.Plan]
		if !ok {
			i = len(all.Suites)
			index[r.Plan] = i
			all.Suites = append(all.Suites, junitSuite{Name: r.Plan, Timestamp: r.StartedAt.UTC().Format("2006-01-02T15:04:05")})
		}
		subject := Subject(r)
		if r.Subjects != "" {
			subject = r.Subjects + ":" + subject
		}
		name := fmt.Sprintf("%s/%d members/%s", r.Plan, r.Members, subject)
		if r.Seed != 0 {
			name += fmt.Sprintf("/seed %d", r.Seed)
		}
		c := junitCase{Name: name, Classname: "upgradelab." + r.Plan, Time: r.Duration.Seconds()}
		var out strings.Builder
		for n, s := range r.Steps {
			fmt.Fprintf(&out, "%2d. %s (%.1fs): %s", n+1, s.Step, s.Duration.Seconds(), s.Availability)
			if s.Error != "" {
				fmt.Fprintf(&out, " FAILED: %s", s.Error)
			}
			out.WriteByte('\n')
		}
		fmt.Fprintf(&out, "runtime %s, %d writes, %d reads, %d failed, %d lost, linearizable %s; logs in %s\n",
			r.Runtime, r.Writes, r.Reads, r.FailedOps, len(r.LostWrites), r.Linearizable, r.Dir)
		c.SystemOut = out.String()
		s := &all.Suites[i]
		s.Tests++
		s.Time += c.Time
		all.Tests++
		all.Time += c.Time
		if r.Skipped != "" {
			c.Skipped = &junitSkipped{Message: r.Skipped}
			s.Skipped++
			all.Skipped++
		} else if !r.Passed {
			msg := r.Failure
			if i := strings.IndexByte(msg, '\n'); i >= 0 {
				msg = msg[:i]
			}
			c.Failure = &junitFailure{Message: msg, Type: "upgradelab.failure", Text: r.Failure}
			s.Failures++
			all.Failures++
		}
		s.Cases = append(s.Cases, c)
	}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}
