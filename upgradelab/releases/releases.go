package releases

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"

	"github.com/coreos/go-semver/semver"
	"sigs.k8s.io/yaml"
)

//go:embed knowledge.yaml
var knowledgeYAML []byte

// Knowledge is the whole of knowledge.yaml.
type Knowledge struct {
	Lines    []Line    `json:"lines"`
	Blockers []Blocker `json:"blockers"`
	Flags    Flags     `json:"flags"`
}

// Line is one minor release line.
type Line struct {
	Minor  string `json:"minor"`
	Latest string `json:"latest"`
	// LeaveFrom is the lowest patch of the line from which the next minor may be entered
	// ("" for the newest line).
	LeaveFrom string   `json:"leaveFrom,omitempty"`
	Sources   []string `json:"sources"`
}

// Range is an inclusive range of versions; an empty end is open.
type Range struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Blocker is one known way a hop breaks.
type Blocker struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Check names the observation assess makes for it.
	Check string `json:"check"`
	// Affected are the versions that create the state or carry the bug (empty: any).
	Affected []Range `json:"affected,omitempty"`
	// Into is the minor whose start-up the state breaks ("" for any hop).
	Into string `json:"into"`
	// FixedIn names the patches that fix or repair it, as prose.
	FixedIn string `json:"fixedIn,omitempty"`
	// ClearedBySnapshot: the state is entries the affected versions leave in every WAL, gone
	// from what a member replays once it saves a snapshot after the last affected member left.
	// A path that leaves those versions and later enters Into waits for every member's
	// snapshot in between (SnapshotAfter).
	ClearedBySnapshot bool     `json:"clearedBySnapshot,omitempty"`
	Severity          string   `json:"severity,omitempty"`
	Consequence       string   `json:"consequence"`
	Fix               string   `json:"fix"`
	Sources           []string `json:"sources"`
}

// Flags are the command-line flags each minor removed, by minor.
type Flags struct {
	Removed map[string][]FlagChange `json:"removed"`
	Sources map[string]string       `json:"sources"`
}

// FlagChange is one flag a minor no longer takes, with what replaces it.
type FlagChange struct {
	Flag        string `json:"flag"`
	Replacement string `json:"replacement,omitempty"`
	Note        string `json:"note,omitempty"`
}

// Load parses the embedded knowledge.
func Load() (*Knowledge, error) {
	return parse(knowledgeYAML)
}

func parse(b []byte) (*Knowledge, error) {
	var k Knowledge
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		return nil, fmt.Errorf("release knowledge: %w", err)
	}
	sort.Slice(k.Lines, func(i, j int) bool { return minorLess(k.Lines[i].Minor, k.Lines[j].Minor) })
	if err := k.validate(); err != nil {
		return nil, fmt.Errorf("release knowledge: %w", err)
	}
	return &k, nil
}

// validate checks what the rules rely on: versions that parse and sit in their line, a
// source for every fact, and blockers that say what happens and what to do.
func (k *Knowledge) validate() error {
	for i, l := range k.Lines {
		latest, err := semver.NewVersion(l.Latest)
		if err != nil || MinorOf(latest) != l.Minor {
			return fmt.Errorf("line %s: latest %q is not a %s patch", l.Minor, l.Latest, l.Minor)
		}
		if l.LeaveFrom != "" {
			leave, err := semver.NewVersion(l.LeaveFrom)
			if err != nil || MinorOf(leave) != l.Minor || latest.LessThan(*leave) {
				return fmt.Errorf("line %s: leaveFrom %q is not a %s patch at or below %s", l.Minor, l.LeaveFrom, l.Minor, l.Latest)
			}
		} else if i+1 < len(k.Lines) {
			return fmt.Errorf("line %s: no leaveFrom, though %s follows it", l.Minor, k.Lines[i+1].Minor)
		}
		if len(l.Sources) == 0 {
			return fmt.Errorf("line %s: no source", l.Minor)
		}
	}
	ids := map[string]bool{}
	for _, b := range k.Blockers {
		switch {
		case b.ID == "" || ids[b.ID]:
			return fmt.Errorf("blocker %q: missing or repeated id", b.ID)
		case b.Check == "" || b.Title == "" || b.Consequence == "" || b.Fix == "":
			return fmt.Errorf("blocker %s: check, title, consequence and fix are all needed", b.ID)
		case len(b.Sources) == 0:
			return fmt.Errorf("blocker %s: no source", b.ID)
		case b.Severity != "" && b.Severity != "warn" && b.Severity != "block":
			return fmt.Errorf("blocker %s: severity %q is neither warn nor block", b.ID, b.Severity)
		case b.ClearedBySnapshot && (b.Into == "" || len(b.Affected) == 0):
			return fmt.Errorf("blocker %s: cleared by a snapshot, but it names no affected versions or no minor it breaks", b.ID)
		}
		if _, ok := k.Line(b.Into); b.Into != "" && !ok {
			return fmt.Errorf("blocker %s: into %q is no known line", b.ID, b.Into)
		}
		ids[b.ID] = true
		for _, r := range b.Affected {
			for _, end := range []string{r.From, r.To} {
				if _, err := semver.NewVersion(end); end != "" && err != nil {
					return fmt.Errorf("blocker %s: affected version %q: %w", b.ID, end, err)
				}
			}
		}
	}
	for minor, flags := range k.Flags.Removed {
		if _, ok := k.Line(minor); !ok {
			return fmt.Errorf("flags removed in %q: no such line", minor)
		}
		if k.Flags.Sources[minor] == "" {
			return fmt.Errorf("flags removed in %s: no source", minor)
		}
		for _, f := range flags {
			if f.Flag == "" || strings.HasPrefix(f.Flag, "-") {
				return fmt.Errorf("flags removed in %s: %q is not a flag name without dashes", minor, f.Flag)
			}
		}
	}
	return nil
}

// Line is the line of a minor ("3.5").
func (k *Knowledge) Line(minor string) (Line, bool) {
	for _, l := range k.Lines {
		if l.Minor == minor {
			return l, true
		}
	}
	return Line{}, false
}

// Latest is the newest patch of a minor.
func (k *Knowledge) Latest(minor string) (*semver.Version, error) {
	l, ok := k.Line(minor)
	if !ok {
		return nil, fmt.Errorf("no release line %s is known (known: %s)", minor, strings.Join(k.Minors(), ", "))
	}
	return semver.NewVersion(l.Latest)
}

// Minors lists the known lines, oldest first.
func (k *Knowledge) Minors() []string {
	out := make([]string, len(k.Lines))
	for i, l := range k.Lines {
		out[i] = l.Minor
	}
	return out
}

// Next is the minor after minor ("" when it is the newest).
func (k *Knowledge) Next(minor string) string {
	for i, l := range k.Lines {
		if l.Minor == minor && i+1 < len(k.Lines) {
			return k.Lines[i+1].Minor
		}
	}
	return ""
}

// RemovedFlag says whether the minor no longer takes flag, and what replaces it.
func (k *Knowledge) RemovedFlag(minor, flag string) (FlagChange, bool) {
	for _, f := range k.Flags.Removed[minor] {
		if f.Flag == flag {
			return f, true
		}
	}
	return FlagChange{}, false
}

// Blocker is the blocker with the given check ("" and false when none has it).
func (k *Knowledge) Blocker(check string) (Blocker, bool) {
	for _, b := range k.Blockers {
		if b.Check == check {
			return b, true
		}
	}
	return Blocker{}, false
}

// Affects says whether v is in one of the blocker's ranges (any version when it has none).
func (b Blocker) Affects(v *semver.Version) bool {
	if len(b.Affected) == 0 {
		return true
	}
	for _, r := range b.Affected {
		if r.Contains(v) {
			return true
		}
	}
	return false
}

// Contains says whether v is in the range.
func (r Range) Contains(v *semver.Version) bool {
	if r.From != "" && v.LessThan(*semver.New(r.From)) {
		return false
	}
	if r.To != "" && semver.New(r.To).LessThan(*v) {
		return false
	}
	return true
}

// ParseVersion reads a full version as etcd reports it ("3.5.17", "v3.5.17"); pre-release and
// build suffixes are kept.
func ParseVersion(s string) (*semver.Version, error) {
	v, err := semver.NewVersion(strings.TrimPrefix(strings.TrimSpace(s), "v"))
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", s, err)
	}
	return v, nil
}

// MinorOf is a version's major.minor.
func MinorOf(v *semver.Version) string {
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// minorLess orders "3.4" before "3.10".
func minorLess(a, b string) bool {
	va, errA := semver.NewVersion(a + ".0")
	vb, errB := semver.NewVersion(b + ".0")
	if errA != nil || errB != nil {
		return a < b
	}
	return va.LessThan(*vb)
}

// MinorsBetween are the minors strictly after from up to and including to, in order: the
// minors an upgrade from from to to enters.
func (k *Knowledge) MinorsBetween(from, to string) []string {
	var out []string
	for _, l := range k.Lines {
		if minorLess(from, l.Minor) && !minorLess(to, l.Minor) {
			out = append(out, l.Minor)
		}
	}
	return out
}
