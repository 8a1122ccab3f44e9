package report

import (
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"etcdx/pkg/judge"
	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/lab"
	"etcdx/upgradelab/plan"
	"etcdx/upgradelab/workload"
)

func sampleRun(t0 time.Time) lab.Report {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	return lab.Report{
		Plan: "faults", Members: 2, Subjects: "ours", Runtime: "container", Seed: 42, Dir: "/w/faults-2-1",
		StartedAt: t0, EndedAt: at(20), Duration: 20 * time.Second, WorkloadStart: at(1),
		Failure:  `step 2 (freeze leader): writes stalled <script>alert(1)</script>`,
		Binaries: map[string]cluster.Binary{"3.5": {Version: "3.5.0", Path: "/b/etcd-3.5", SHA256: strings.Repeat("ab", 32)}},
		Steps: []lab.StepReport{
			{Step: "replace m1 with 3.6", Kind: plan.KindReplace, StartedAt: at(2), Duration: 2 * time.Second},
			{Step: "freeze leader", Kind: plan.KindFreeze, StartedAt: at(5), Duration: time.Second, Error: "writes stalled for 3s (max-stall)"},
		},
		Timeline: lab.Timeline{
			States: []lab.MemberState{
				{At: at(1), Member: "m1", Binary: "3.5.0", State: "running"},
				{At: at(1), Member: "m2", Binary: "3.5.0", State: "running"},
				{At: at(2), Member: "m1", Binary: "3.5.0", State: "stopped"},
				{At: at(3), Member: "m1", Binary: "3.6.0", State: "running"},
				{At: at(5), Member: "m2", Binary: "3.5.0", State: "frozen"},
			},
			Versions: []lab.VersionSample{
				{At: at(1), Member: "m1", Answered: true, Server: "3.5.0", Cluster: "3.5.0"},
				{At: at(2), Member: "m1", Answered: false},
				{At: at(3.2), Member: "m1", Answered: true, Server: "3.6.0", Cluster: "3.5.0", Storage: "3.5.0"},
			},
		},
		Series:       []workload.Point{{T: 0, OK: 100, Writes: 70, P99: 5}, {T: 1, OK: 20, Failed: 3, Writes: 10, P99: 900, Max: 1000}},
		Availability: workload.Availability{Requests: 123, Failed: 3, LongestStall: 3 * time.Second},
		AckedWrites:  80, Linearizable: "Ok", HistoryOps: 50, LostWrites: []string{},
		Hashes: map[string]judge.MemberHash{"m1": {Hash: 7}, "m2": {Hash: 7}},
	}
}

// wellFormed checks that every inline SVG of a page is well-formed XML.
func wellFormed(t *testing.T, page string) int {
	t.Helper()
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
	for _, s := range svgs {
		d := xml.NewDecoder(strings.NewReader(s))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("SVG is not well-formed: %v\n%s", err, s)
			}
		}
	}
	return len(svgs)
}

func TestRunPageHoldsVerdictTimelineAndCharts(t *testing.T) {
	b, err := HTML(sampleRun(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := wellFormed(t, page); n != 4 { // the timeline, throughput, errors, latency
		t.Fatalf("%d drawings, want 4", n)
	}
	for _, want := range []string{
		`<span class="FAIL">FAIL</span>`, "faults, 2 members, ours",
		"&lt;script&gt;alert(1)&lt;/script&gt;", // the failure text is escaped
		`class="lane">m1<`, `class="lane">m2<`,  // a lane per member
		`class="state">frozen<`, `class="bin">3.6.0<`, // states and binaries on the lanes
		"cluster 3.5.0, storage 3.5.0",           // what the member said
		`class="num fault">2<`, `class="num">1<`, // steps numbered, the fault marked
		"band failed", "upgradelab plan --seed 42",
		"<td>acknowledged writes</td><td>0 lost of 80</td>", "<td>hashkv agreement</td><td>2 members answered, 1 distinct hashes</td>",
		`href="m1.log"`, `href="report.json"`, "3.5.0", "/b/etcd-3.5",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "http://") && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Error("the page runs scripts or fetches something")
	}
}

func TestSummaryPutsSubjectSetsSideBySide(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	ours := sampleRun(t0)
	ours.Dir = "/w/ours/faults-2-1"
	up := sampleRun(t0)
	up.Subjects, up.Passed, up.Failure, up.Dir = "upstream", true, "", "/w/upstream/faults-2-1"
	skipped := lab.Report{Plan: "upgrade-with-crash", Members: 1, Subjects: "ours", Skipped: "cannot run at 1 members"}
	b, err := Summary([]lab.Report{ours, up, skipped}, "/w")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	wellFormed(t, page)
	for _, want := range []string{
		"1 of 2 runs passed, 1 skipped", "<th>ours</th><th>upstream</th>",
		`href="ours/faults-2-1/report.html"`, `href="upstream/faults-2-1/report.html"`,
		`<span class="PASS">PASS</span>`, `<span class="FAIL">FAIL</span>`, `<span class="SKIP">SKIP</span>`, "cannot run at 1 members",
		"seed 42", "Binaries of upstream",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	// The faults row has both sets' results; the skipped row has upstream's cell empty.
	if strings.Count(page, "<tr><td>faults") != 1 || !strings.Contains(page, "<td>—</td>") {
		t.Errorf("rows not merged by plan, size and seed:\n%s", page)
	}
}

// The charts grey out what the workload did not cover (the run's start and its checks) and an
// errors chart with nothing failed says so instead of drawing a scale of one failure a second.
func TestChartsMarkTheIdlePartsAndAnEmptyScale(t *testing.T) {
	r := sampleRun(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	b, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	// Three charts, each with the start (0-1 s) and the checks (3-20 s) greyed.
	if n := strings.Count(page, `class="idle"`); n != 6 {
		t.Errorf("%d idle spans, want 6 (two per chart)", n)
	}
	if !strings.Contains(page, "no workload: the workload stopped") || !strings.Contains(page, ">max 3 failed/s<") {
		t.Error("the idle spans or the errors scale are not labelled")
	}
	for i := range r.Series {
		r.Series[i].Failed = 0
	}
	b, _ = HTML(r)
	if page := string(b); !strings.Contains(page, ">none: 0 failed/s<") || strings.Contains(page, "max 1 failed/s") {
		t.Error("an errors chart with nothing failed does not say so")
	}
}
