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
