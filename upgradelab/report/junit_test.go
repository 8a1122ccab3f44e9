package report

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/lab"
)

func TestJUnitHasACasePerRunAndTheFailure(t *testing.T) {
	started := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	bins := map[string]cluster.Binary{"3.5": {Version: "3.5.0"}, "3.6": {Version: "3.6.0"}}
	reports := []lab.Report{
		{Plan: "upgrade", Members: 3, Passed: true, StartedAt: started, Duration: 12 * time.Second, Binaries: bins,
			Steps: []lab.StepReport{{Step: "replace every member with 3.6", Duration: 4 * time.Second}}},
		{Plan: "upgrade", Members: 5, Passed: false, StartedAt: started, Duration: 20 * time.Second, Binaries: bins, Seed: 7,
			Failure: "step 1 (replace every member with 3.6): writes stalled\nmore detail",
			Steps:   []lab.StepReport{{Step: "replace every member with 3.6", Error: "writes stalled"}}},
		{Plan: "downgrade", Members: 3, Passed: true, StartedAt: started, Duration: 8 * time.Second, Binaries: bins},
	}
	b, err := JUnit(reports)
	if err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got.Tests != 3 || got.Failures != 1 || len(got.Suites) != 2 || got.Time != 40 {
		t.Fatalf("totals %+v", got)
	}
	up := got.Suites[0]
	if up.Name != "upgrade" || up.Tests != 2 || up.Failures != 1 || up.Timestamp != "2026-11-23T12:00:00" {
		t.Fatalf("suite %+v", up)
	}
	failed := up.Cases[1]
	if failed.Name != "upgrade/5 members/3.5@3.5.0,3.6@3.6.0/seed 7" || failed.Failure == nil ||
		failed.Failure.Message != "step 1 (replace every member with 3.6): writes stalled" ||
		!strings.Contains(failed.Failure.Text, "more detail") || !strings.Contains(failed.SystemOut, "FAILED: writes stalled") {
		t.Fatalf("failed case %+v", failed)
	}
	if up.Cases[0].Failure != nil {
		t.Fatalf("passed case has a failure: %+v", up.Cases[0])
	}
}

func TestJUnitMarksSkippedCells(t *testing.T) {
	b, err := JUnit([]lab.Report{{Plan: "upgrade-with-crash", Members: 1, Skipped: "cannot run at 1 members: no member m2"}})
	if err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Suites[0].Cases[0]
	if got.Skipped != 1 || got.Failures != 0 || c.Skipped == nil || c.Skipped.Message != "cannot run at 1 members: no member m2" || c.Failure != nil {
		t.Fatalf("skipped cell: %+v %+v", got, c)
	}
}
