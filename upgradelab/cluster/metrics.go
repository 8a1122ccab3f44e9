package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is what the lab, upgradelab assess and the soak read from a member's /metrics (every
// etcd since 3.4 serves these; ours too).
type Metrics struct {
	// QuotaBytes is etcd_server_quota_backend_bytes (0: not served). 3.5 reports its quota
	// only here, not in Status.
	QuotaBytes int64 `json:"quotaBytes,omitempty"`
	// SnapshotsSaved is how many snapshots this process has saved: the count of
	// etcd_debugging_snap_save_total_duration_seconds (-1: not served).
	SnapshotsSaved int64 `json:"snapshotsSaved"`
	// StartTime is process_start_time_seconds (0: not served): a restart shows as a new one.
	StartTime float64 `json:"startTime,omitempty"`
	// Goroutines is go_goroutines (0: not served), which the soak follows for leaks.
	Goroutines int64 `json:"goroutines,omitempty"`
}

// SavedSnapshotSince says whether the member saved a snapshot after before was read: its count
// rose, or it restarted since and has saved one since the restart.
func (m Metrics) SavedSnapshotSince(before Metrics) bool {
	if m.SnapshotsSaved < 0 {
		return false
	}
	if m.StartTime != before.StartTime {
		return m.SnapshotsSaved > 0
	}
	return m.SnapshotsSaved > before.SnapshotsSaved
}

// GetMetrics reads base/metrics with hc.
func GetMetrics(ctx context.Context, hc *http.Client, base string) (Metrics, error) {
	out := Metrics{SnapshotsSaved: -1}
	body, err := getOK(ctx, hc, base+"/metrics")
	if err != nil {
		return out, err
	}
	defer body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(body, 16<<20))
	if err != nil {
		return out, fmt.Errorf("%s/metrics: %w", base, err)
	}
	if m := first(families, "etcd_server_quota_backend_bytes"); m != nil && m.Gauge != nil {
		out.QuotaBytes = int64(m.Gauge.GetValue())
	}
	if m := first(families, "etcd_debugging_snap_save_total_duration_seconds"); m != nil && m.Histogram != nil {
		out.SnapshotsSaved = int64(m.Histogram.GetSampleCount())
	}
	if m := first(families, "process_start_time_seconds"); m != nil && m.Gauge != nil {
		out.StartTime = m.Gauge.GetValue()
	}
	if m := first(families, "go_goroutines"); m != nil && m.Gauge != nil {
		out.Goroutines = int64(m.Gauge.GetValue())
	}
	return out, nil
}

func first(families map[string]*dto.MetricFamily, name string) *dto.Metric {
	if f := families[name]; f != nil && len(f.Metric) > 0 {
		return f.Metric[0]
	}
	return nil
}

// Metrics reads the member's /metrics.
func (m *Member) Metrics(ctx context.Context) (Metrics, error) {
	return GetMetrics(ctx, m.httpClient(), m.ClientURL)
}
