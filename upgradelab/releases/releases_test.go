package releases

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/coreos/go-semver/semver"
)

func mustLoad(t *testing.T) *Knowledge {
	t.Helper()
	k, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func versions(s ...string) []*semver.Version {
	out := make([]*semver.Version, len(s))
	for i, v := range s {
		out[i] = semver.New(v)
	}
	return out
}

// render is a path as "kind from>to" stages, e.g. "patch 3.5.17>3.5.35".
func render(hops []Hop) string {
	var parts []string
	for _, h := range hops {
		parts = append(parts, fmt.Sprintf("%s %s>%s", h.Kind, strings.Join(h.From, ","), h.To))
	}
	return strings.Join(parts, " | ")
}

func TestPath(t *testing.T) {
	k := mustLoad(t)
	for _, tc := range []struct {
		name    string
		members []string
		target  string
		want    string
		err     error
	}{
		{"the issue's example: patch first, then a minor at a time", []string{"3.5.17", "3.5.17", "3.5.17"}, "3.7.3",
			"patch 3.5.17>3.5.35 | upgrade 3.5.35>3.6.16 | upgrade 3.6.16>3.7.3", nil},
		{"at the leave-from patch: no patch hop", []string{"3.5.32", "3.5.33", "3.5.32"}, "3.6.16",
			"upgrade 3.5.32,3.5.33>3.6.16", nil},
		{"3.6 below 3.6.11 before 3.7: the whole line to its newest", []string{"3.6.4", "3.6.4", "3.6.12"}, "3.7.3",
			"patch 3.6.4,3.6.12>3.6.16 | upgrade 3.6.16>3.7.3", nil},
		{"from 3.4 through every minor", []string{"3.4.23", "3.4.23", "3.4.23"}, "3.7.3",
			"upgrade 3.4.23>3.5.35 | upgrade 3.5.35>3.6.16 | upgrade 3.6.16>3.7.3", nil},
		{"to an older patch of the next line as asked", []string{"3.6.16"}, "3.7.1",
			"upgrade 3.6.16>3.7.1", nil},
		{"mid-upgrade: the lagging members catch up, the others' old patch too", []string{"3.5.35", "3.6.2", "3.6.16"}, "3.7.3",
			"upgrade 3.5.35,3.6.2>3.6.16 | upgrade 3.6.16>3.7.3", nil},
		{"same line: patch to the target", []string{"3.6.4", "3.6.16", "3.6.9"}, "3.6.16",
			"patch 3.6.4,3.6.9>3.6.16", nil},
		{"same line, lower patch: every member moves", []string{"3.6.16", "3.6.16"}, "3.6.12",
			"patch 3.6.16>3.6.12", nil},
		{"already there: nothing to do", []string{"3.7.3", "3.7.3", "3.7.3"}, "3.7.3", "", nil},
		{"downgrade one minor at a time", []string{"3.7.3", "3.7.3", "3.7.3"}, "3.5.35",
			"downgrade 3.7.3>3.6.16 | downgrade 3.6.16>3.5.35", nil},
		{"downgrade from a mixed cluster is refused", []string{"3.6.16", "3.7.3"}, "3.5.35", "", ErrMixedDowngrade},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hops, err := k.Path(versions(tc.members...), semver.New(tc.target))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if got := render(hops); got != tc.want {
				t.Fatalf("path\n got: %s\nwant: %s", got, tc.want)
			}
			for _, h := range hops {
				if h.Why == "" {
					t.Errorf("hop %s to %s says not why", h.Kind, h.To)
				}
			}
		})
	}
}

func TestPathRefusesUnknownLines(t *testing.T) {
	k := mustLoad(t)
	for _, tc := range []struct{ members, target string }{{"3.3.27", "3.7.3"}, {"3.6.16", "3.9.0"}} {
		if _, err := k.Path(versions(tc.members), semver.New(tc.target)); err == nil || !strings.Contains(err.Error(), "no release line") {
			t.Errorf("%s to %s: err = %v, want a refusal naming the unknown line", tc.members, tc.target, err)
		}
	}
}

func TestKnowledgeHangsTogether(t *testing.T) {
	k := mustLoad(t)
	if got := strings.Join(k.Minors(), ","); got != "3.4,3.5,3.6,3.7" {
		t.Fatalf("lines = %s", got)
	}
	// The levels ours builds match these lines' newest patches (docs/compatibility.md).
	for minor, want := range map[string]string{"3.5": "3.5.35", "3.6": "3.6.16", "3.7": "3.7.3"} {
		if v, err := k.Latest(minor); err != nil || v.String() != want {
			t.Errorf("latest %s = %v, %v; want %s", minor, v, err, want)
		}
	}
	for _, check := range []string{"learner-mismatch", "zombie-members", "v2-custom", "skipped-minor", "patch-below-leave", "learner-present", "v2-entries"} {
		if _, ok := k.Blocker(check); !ok {
			t.Errorf("no blocker has check %q, which assess makes", check)
		}
	}
	if f, ok := k.RemovedFlag("3.7", "experimental-compaction-batch-limit"); !ok || f.Replacement != "compaction-batch-limit" {
		t.Errorf("3.7 removed --experimental-compaction-batch-limit: %+v, %v", f, ok)
	}
	if _, ok := k.RemovedFlag("3.6", "enable-v2"); !ok {
		t.Error("3.6 removed --enable-v2")
	}
}

func TestBlockerAffects(t *testing.T) {
	k := mustLoad(t)
	b, _ := k.Blocker("learner-mismatch")
	for v, want := range map[string]bool{"3.5.0": false, "3.5.1": true, "3.5.19": true, "3.5.20": false, "3.6.0": false} {
		if got := b.Affects(semver.New(v)); got != want {
			t.Errorf("%s affects %s = %v, want %v", b.ID, v, got, want)
		}
	}
}

func TestValidateRefusesBadKnowledge(t *testing.T) {
	for name, doc := range map[string]string{
		"latest outside its line": `lines: [{minor: "3.5", latest: "3.6.1", sources: [x]}]`,
		"no source":               `lines: [{minor: "3.5", latest: "3.5.1"}]`,
		"leaveFrom missing":       `lines: [{minor: "3.5", latest: "3.5.1", sources: [x]}, {minor: "3.6", latest: "3.6.1", sources: [x]}]`,
		"blocker without a fix": `lines: [{minor: "3.5", latest: "3.5.1", sources: [x]}]
blockers: [{id: a, title: t, check: c, consequence: c, sources: [x]}]`,
		"bad range": `lines: [{minor: "3.5", latest: "3.5.1", sources: [x]}]
blockers: [{id: a, title: t, check: c, consequence: c, fix: f, sources: [x], affected: [{from: "3.x"}]}]`,
		"unknown field": `lines: [{minor: "3.5", latest: "3.5.1", sources: [x], newest: "3.5.2"}]`,
	} {
		if _, err := parse([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{"3.5.17": "3.5.17", "v3.6.0": "3.6.0", " 3.7.3\n": "3.7.3"} {
		if v, err := ParseVersion(in); err != nil || v.String() != want {
			t.Errorf("ParseVersion(%q) = %v, %v", in, v, err)
		}
	}
	for _, in := range []string{"", "3.5", "three"} {
		if _, err := ParseVersion(in); err == nil {
			t.Errorf("ParseVersion(%q) accepted", in)
		}
	}
}

func TestSnapshotAfter(t *testing.T) {
	k, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	hop := func(kind, to string, from ...string) Hop {
		v, err := ParseVersion(to)
		if err != nil {
			t.Fatal(err)
		}
		return Hop{Kind: kind, From: from, To: v}
	}
	up, patch, down := HopUpgrade, HopPatch, HopDowngrade
	for _, tc := range []struct {
		name string
		hops []Hop
		at   int
		want string // the blocker's check ("": no snapshot needed)
	}{
		{"3.5 -> 3.6 -> 3.7: after the 3.6 hop", []Hop{hop(up, "3.6.16", "3.5.35"), hop(up, "3.7.3", "3.6.16")}, 0, "v2-entries"},
		{"3.5 -> 3.6 -> 3.7: not after the 3.7 hop", []Hop{hop(up, "3.6.16", "3.5.35"), hop(up, "3.7.3", "3.6.16")}, 1, ""},
		{"3.4 -> 3.5 -> 3.6 -> 3.7: after the 3.6 hop only", []Hop{hop(up, "3.5.35", "3.4.23"), hop(up, "3.6.16", "3.5.35"), hop(up, "3.7.3", "3.6.16")}, 1, "v2-entries"},
		{"3.4 -> 3.5 -> ...: after the 3.5 hop, for 3.4's health reads before 3.6", []Hop{hop(up, "3.5.35", "3.4.23"), hop(up, "3.6.16", "3.5.35"), hop(up, "3.7.3", "3.6.16")}, 0, "v2-health-reads"},
		{"3.5 -> 3.6 and no further", []Hop{hop(up, "3.6.16", "3.5.35")}, 0, ""},
		{"3.6 patch hop, then 3.7", []Hop{hop(patch, "3.6.16", "3.6.4"), hop(up, "3.7.3", "3.6.16")}, 0, ""},
		{"3.4 -> 3.5 and no further", []Hop{hop(up, "3.5.35", "3.4.23")}, 0, ""},
		{"a downgrade", []Hop{hop(down, "3.6.16", "3.7.3"), hop(down, "3.5.35", "3.6.16")}, 0, ""},
	} {
		b, ok := k.SnapshotAfter(tc.hops, tc.at)
		if got := b.Check; ok != (tc.want != "") || got != tc.want {
			t.Errorf("%s: SnapshotAfter = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}
