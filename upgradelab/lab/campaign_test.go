package lab

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/plan"
)

// TestCampaignSkipsCellsThatCannotRun: a cell with a reason to skip is reported as skipped, with
// that reason, and announced; nothing is started for it and no per-run files are asked for.
func TestCampaignSkipsCellsThatCannotRun(t *testing.T) {
	p := &plan.Plan{Name: "upgrade", Members: 3, Start: "3.6", Seed: 9}
	var out bytes.Buffer
	afterRun := 0
	c := &Campaign{Runner: &Runner{Binaries: cluster.Binaries{}, WorkDir: t.TempDir()}, Progress: &out,
		Cells:    []Cell{{Plan: p, Members: 1, Skip: "cannot run at 1 members: no member m2"}, {Plan: p, Members: 5, Set: "mixed", Skip: "no binary for 3.7"}},
		AfterRun: func(Report) { afterRun++ }}
	reports := c.Run(context.Background())
	if len(reports) != 2 || afterRun != 0 {
		t.Fatalf("%d reports, %d per-run callbacks", len(reports), afterRun)
	}
	for i, want := range []string{"cannot run at 1 members: no member m2", "no binary for 3.7"} {
		r := reports[i]
		if r.Skipped != want || r.Passed || r.Plan != "upgrade" || r.Seed != 9 || r.LostWrites == nil {
			t.Errorf("report %d: %+v", i, r)
		}
	}
	if reports[1].Subjects != "mixed" || reports[1].Members != 5 {
		t.Errorf("the matrix cell's report: %+v", reports[1])
	}
	for _, line := range []string{"SKIP upgrade/1: cannot run at 1 members: no member m2", "SKIP upgrade/5 (mixed): no binary for 3.7"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("progress lacks %q:\n%s", line, out.String())
		}
	}
}
