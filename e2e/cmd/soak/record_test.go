package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"etcdx/e2e/kubeload"
)

// TestReportFromSavedRecord: a record saved by --samples and loaded by --report-from gives the
// report the run would have written, and judges it the same way (here ours' memory grows where
// upstream's is flat).
func TestReportFromSavedRecord(t *testing.T) {
	side := func(label string, rssPerMinute int64) recordSide {
		sd := recordSide{Label: label}
		for i := range 60 {
			m := memberReading{RSS: (500 << 20) + int64(i)*rssPerMinute, Goroutines: 200, FDs: 60, DBSize: 100 << 20, DBInUse: 80 << 20, WALFiles: 5, SnapFiles: 1}
			var res kubeload.Result
			res.Classes[kubeload.Mutating] = kubeload.Summary{Count: 1000, P50: 5 * time.Millisecond, P99: 20 * time.Millisecond}
			sd.Samples = append(sd.Samples, sample{At: time.Duration(i+1) * time.Minute, Members: []memberReading{m, m, m}, Load: res})
		}
		return sd
	}
	rec := record{Date: "2026-12-06", Hours: 1, Took: time.Hour, Nodes: 500, Sample: time.Minute, DefragEvery: 20 * time.Minute,
		Compaction: 5 * time.Minute, OursBuiltAt: "abc1234", Sides: []recordSide{side("ours", 20<<20), side("upstream v3.7.3", 0)}}
	dir := t.TempDir()
	path := filepath.Join(dir, "soak.json")
	if err := rec.save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := loadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	out, plot := filepath.Join(dir, "soak.md"), filepath.Join(dir, "soak.png")
	want, got := newReport(rec, out, plot), newReport(loaded, out, plot)
	if got != want {
		t.Errorf("the report from the saved record differs:\n%s\nwant:\n%s", got, want)
	}
	for _, s := range []string{"built at abc1234", "N = 500 nodes", "| resident memory (sum of members) |", verdictGrows, "ours 0 of 60, upstream 0 of 60"} {
		if !strings.Contains(got, s) {
			t.Errorf("the report lacks %q:\n%s", s, got)
		}
	}
	if err := writePlot(plot, loaded.Sides); err != nil {
		t.Fatal(err)
	}

	rec.Sides = rec.Sides[:1]
	if err := rec.save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := loadRecord(path); err == nil || !strings.Contains(err.Error(), "1 sides") {
		t.Errorf("a record of one side loaded: %v", err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadRecord(path); err == nil {
		t.Error("a truncated record loaded")
	}
}
