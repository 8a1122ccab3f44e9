package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Record is one run of a suite at one level: what ran, how, and every test's result per side.
type Record struct {
	Level    string              `json:"level"`    // "3.7"
	Upstream string              `json:"upstream"` // the release the tests and the reference are: "v3.7.3"
	Suite    string              `json:"suite"`    // "e2e"
	Date     string              `json:"date"`
	Command  string              `json:"command"`
	Machine  string              `json:"machine"`
	Notes    []string            `json:"notes,omitempty"` // how the sides' binaries were laid out
	Results  map[string][]Result `json:"results"`         // by side
}

// RecordPath is where a level's record of a suite is kept under dir.
func RecordPath(dir, suite, level string) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s.json", suite, level))
}

// Save writes r as indented JSON.
func (r *Record) Save(path string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// LoadRecord reads one record.
func LoadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Replace puts newer results of some tests in place of a side's, and notes how they were had.
func (r *Record) Replace(side string, newer []Result, note string) {
	byName := byTest(newer)
	for i, old := range r.Results[side] {
		if n, ok := byName[old.Test]; ok {
			r.Results[side][i] = n
		}
	}
	r.Notes = append(r.Notes, note)
}

// LoadRecords reads every record in dir, ordered by suite then newest level first.
func LoadRecords(dir string) ([]*Record, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var recs []*Record
	for _, p := range paths {
		r, err := LoadRecord(p)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].Suite != recs[j].Suite {
			return recs[i].Suite < recs[j].Suite
		}
		return recs[i].Level > recs[j].Level
	})
	return recs, nil
}

// LoadWhy reads the explanations of differences: lines "LEVEL SUITE TEST: why", # for comments.
func LoadWhy(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	why := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("%s: a line without a colon: %q", path, l)
		}
		why[strings.Join(strings.Fields(k), " ")] = strings.TrimSpace(v)
	}
	return why, sc.Err()
}

// WhyKey is the key of a test's explanation.
func WhyKey(level, suite, test string) string { return level + " " + suite + " " + test }

// Differences are the tests whose status differs between ours and upstream, in test order.
func (r *Record) Differences() []string {
	ours, up := byTest(r.Results["ours"]), byTest(r.Results["upstream"])
	var d []string
	for _, res := range r.Results["ours"] {
		if u, ok := up[res.Test]; ok && u.Status != ours[res.Test].Status {
			d = append(d, res.Test)
		}
	}
	return d
}

func byTest(rs []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range rs {
		m[r.Test] = r
	}
	return m
}

func counts(rs []Result) string {
	n := map[string]int{}
	for _, r := range rs {
		n[r.Status]++
	}
	return fmt.Sprintf("%d | %d | %d | %d | %d", len(rs), n["pass"], n["fail"]+n["timeout"], n["skip"], n["timeout"])
}

func cell(r Result, ok bool) string {
	if !ok {
		return "not run"
	}
	if r.Failpoint != "" {
		return fmt.Sprintf("%s %.1fs, %s", r.Status, r.Seconds, mdEscape(r.Failpoint))
	}
	return fmt.Sprintf("%s %.1fs", r.Status, r.Seconds)
}

// mdEscape keeps a text inside one table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;").Replace(s)
}

// Markdown is docs/conformance.md: for each record the summary, every difference with its
// explanation (or that it has none yet), then every test on both sides.
func Markdown(recs []*Record, why map[string]string, preamble string) string {
	var b strings.Builder
	b.WriteString(preamble)
	for _, r := range recs {
		fmt.Fprintf(&b, "\n## %s at level %s: upstream's `%s/%s` tests at %s\n\n", r.Suite, r.Level, TestsModule, r.Suite, r.Upstream)
		if r.Suite == "robustness" {
			b.WriteString("Each row is one run of a scenario, with the failpoint it injected; a pass means the failpoint was injected and upstream's linearizability and watch checks found nothing.\n\n")
		}
		fmt.Fprintf(&b, "Run on %s (%s) with:\n\n    %s\n\n", r.Date, r.Machine, r.Command)
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n| side | tests | pass | fail | skip | of the fails, timeouts |\n|---|---|---|---|---|---|\n")
		for _, side := range []string{"ours", "upstream"} {
			fmt.Fprintf(&b, "| %s | %s |\n", side, counts(r.Results[side]))
		}
		ours, up := byTest(r.Results["ours"]), byTest(r.Results["upstream"])
		diffs := r.Differences()
		fmt.Fprintf(&b, "\n### Differences (%d)\n\n", len(diffs))
		if len(diffs) == 0 {
			b.WriteString("None: every test ends the same way on both sides.\n")
		} else {
			b.WriteString("| test | ours | upstream | why |\n|---|---|---|---|\n")
			for _, t := range diffs {
				w, ok := why[WhyKey(r.Level, r.Suite, t)]
				if !ok && ours[t].Status == "pass" && up[t].Status == "skip" {
					w, ok = "ours passes; upstream's release build skips it (it needs failpoints)", true
				}
				if !ok {
					w = "not explained yet (open): " + mdEscape(ours[t].Reason)
					if leaves := leafFailures(ours[t].Failed); len(leaves) > 0 {
						w += " (failed: " + mdEscape(strings.Join(leaves, ", ")) + ")"
					}
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t, cell(ours[t], true), cell(up[t], true), mdEscape(w))
			}
		}
		fmt.Fprintf(&b, "\n### Every test\n\n<details><summary>%d tests</summary>\n\n| test | ours | upstream | reason (ours, where not a pass) |\n|---|---|---|---|\n", len(r.Results["ours"]))
		for _, o := range r.Results["ours"] {
			u, ok := up[o.Test]
			reason := ""
			if o.Status != "pass" {
				reason = mdEscape(o.Reason)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", o.Test, cell(o, true), cell(u, ok), reason)
		}
		b.WriteString("\n</details>\n")
	}
	return b.String()
}

// leafFailures are the failed subtests none of whose own subtests failed (a parent fails with
// its children), at most five.
func leafFailures(failed []string) []string {
	var leaves []string
	for _, f := range failed {
		parent := false
		for _, g := range failed {
			if strings.HasPrefix(g, f+"/") {
				parent = true
				break
			}
		}
		if !parent {
			leaves = append(leaves, f)
		}
	}
	if len(leaves) > 5 {
		leaves = append(leaves[:5], fmt.Sprintf("and %d more", len(leaves)-5))
	}
	return leaves
}
