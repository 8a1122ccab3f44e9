package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"etcdx/upgradelab/lab"
	"etcdx/upgradelab/traces"
)

// RunFiles writes a run's report.json and report.html in its folder.
func RunFiles(rep lab.Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := lab.WriteFile(filepath.Join(rep.Dir, "report.json"), b); err != nil {
		return err
	}
	page, err := HTML(rep)
	if err != nil {
		return err
	}
	return lab.WriteFile(filepath.Join(rep.Dir, "report.html"), page)
}

// Outputs are where a campaign's files go.
type Outputs struct {
	// JSON holds every report; HTML the summary page; JUnit the CI view; Trace every run's
	// spans in one OTLP JSON file.
	JSON, HTML, JUnit, Trace string
}

// Write writes every output of the campaign's reports; each error names the output (by its
// command-line flag).
func (o Outputs) Write(reports []lab.Report) error {
	if err := mergeTraces(reports, o.Trace); err != nil {
		return fmt.Errorf("--trace-file: %w", err)
	}
	b, err := json.MarshalIndent(reports, "", "  ")
	if err != nil {
		return err
	}
	if err := lab.WriteFile(o.JSON, b); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	page, err := Summary(reports, filepath.Dir(o.HTML))
	if err != nil {
		return err
	}
	if err := lab.WriteFile(o.HTML, page); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	x, err := JUnit(reports)
	if err != nil {
		return err
	}
	if err := lab.WriteFile(o.JUnit, x); err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	return nil
}

// mergeTraces writes the spans of every run into one OTLP JSON file.
func mergeTraces(reports []lab.Report, path string) error {
	var all []*tracepb.ResourceSpans
	for _, r := range reports {
		if r.Trace == "" {
			continue
		}
		b, err := os.ReadFile(r.Trace)
		if err != nil {
			return err
		}
		spans, err := traces.UnmarshalJSON(b)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Trace, err)
		}
		all = append(all, spans...)
	}
	b, err := traces.MarshalJSON(all)
	if err != nil {
		return err
	}
	return lab.WriteFile(path, b)
}
