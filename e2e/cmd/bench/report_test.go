package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPartialRunKeepsOtherRows: a run of some parts replaces only its own rows of a table; the
// rows it did not measure stay, tagged with the run they come from (through a second partial
// run too), and the Kubernetes section, one run's steps, is never mixed.
func TestPartialRunKeepsOtherRows(t *testing.T) {
	doc := func(run string, rows ...string) string {
		var b strings.Builder
		b.WriteString("# Performance\n\nintro\n\n## Throughput and latency\n\nRun of " + run + " UTC (1m in all), in `e2e/`: `cmd`\n\n| workload | ops |\n|---|---|\n")
		for _, r := range rows {
			b.WriteString("| " + r + " | 1 |\n")
		}
		b.WriteString("\n## Kubernetes-shaped load: x\n\nRun of " + run + " UTC\n\n| N | ours |\n|---|---|\n")
		for _, r := range rows {
			b.WriteString("| " + r + " | holds |\n")
		}
		return b.String()
	}
	path := filepath.Join(t.TempDir(), "performance.md")
	if err := os.WriteFile(path, []byte(doc("2026-11-27 10:00", "put", "txn", "get")+handMarker+"\nhand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := keepUnmeasured(doc("2026-12-02 06:10", "put"), path)
	for _, want := range []string{"| put | 1 |", "| txn <sup>run of 2026-11-27 10:00</sup> | 1 |", "| get <sup>run of 2026-11-27 10:00</sup> | 1 |"} {
		if !strings.Contains(first, want) {
			t.Fatalf("after a run of put only, no %q in\n%s", want, first)
		}
	}
	if strings.Contains(first, "| txn | holds |") {
		t.Fatalf("the kube section kept another run's rows:\n%s", first)
	}
	if err := os.WriteFile(path, []byte(first+handMarker+"\nhand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second := keepUnmeasured(doc("2026-12-03 08:00", "txn"), path)
	for _, want := range []string{"| txn | 1 |", "| put <sup>run of 2026-12-02 06:10</sup> | 1 |", "| get <sup>run of 2026-11-27 10:00</sup> | 1 |"} {
		if !strings.Contains(second, want) {
			t.Fatalf("after a second partial run, no %q in\n%s", want, second)
		}
	}
	if n := strings.Count(second, "| get "); n != 1 { // its throughput row, kept; the kube section is the new run's
		t.Fatalf("get appears %d times:\n%s", n, second)
	}
}

// TestOfferedRunKeepsThroughputTableWhole: the single-member open-loop workloads have a section of
// their own, so a run of that part alone replaces it and leaves the throughput table as its run
// wrote it (no rows tagged with another run), in the report's order of sections.
func TestOfferedRunKeepsThroughputTableWhole(t *testing.T) {
	section := func(heading, run string, rows ...string) string {
		var b strings.Builder
		b.WriteString("\n## " + heading + "\n\nRun of " + run + " UTC (1m in all), in `e2e/`: `cmd`\n\n| workload | ops |\n|---|---|\n")
		for _, r := range rows {
			b.WriteString("| " + r + " | 1 |\n")
		}
		return b.String()
	}
	old := "# Performance\n\nintro\n" + section("Throughput and latency", "2026-11-27 10:00", "put", "txn") +
		section("One member at a fixed offered load", "2026-11-27 10:00", "open loop 6000/s: put") +
		section("Three members at a fixed offered load", "2026-11-27 10:00", "open loop 3300/s: 3 members, put")
	path := filepath.Join(t.TempDir(), "performance.md")
	if err := os.WriteFile(path, []byte(old+handMarker+"\nhand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := keepUnmeasured("# Performance\n\nintro\n"+section("One member at a fixed offered load", "2026-12-06 01:34", "open loop 6000/s: put", "open loop 5600/s: txn"), path)
	if strings.Contains(got, keptTag) {
		t.Fatalf("a run of the offered part tagged rows of another table:\n%s", got)
	}
	for _, want := range []string{"| put | 1 |", "| txn | 1 |", "Run of 2026-12-06 01:34", "| open loop 5600/s: txn | 1 |", "| open loop 3300/s: 3 members, put | 1 |"} {
		if !strings.Contains(got, want) {
			t.Fatalf("no %q in\n%s", want, got)
		}
	}
	if strings.Count(got, "Run of 2026-11-27 10:00") != 2 {
		t.Fatalf("the throughput and three-member sections should keep their run:\n%s", got)
	}
	th, one, three := strings.Index(got, "## Throughput"), strings.Index(got, "## One member"), strings.Index(got, "## Three members")
	if !(th < one && one < three) {
		t.Fatalf("sections out of order:\n%s", got)
	}
}
