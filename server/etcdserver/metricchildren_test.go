package etcdserver

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// observers must record into the same series WithLabelValues would, and make none before first use.
func TestObserversRecordTheSameSeries(t *testing.T) {
	newVec := func() *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "t_seconds", Help: "h"}, []string{"type", "success"})
	}
	tests := []struct {
		name string
		obs  []outcome
	}{
		{"none", nil},
		{"one", []outcome{{"Put", true}}},
		{"success and failure of one kind", []outcome{{"Range", true}, {"Range", false}, {"Range", true}}},
		{"several kinds", []outcome{{"Put", true}, {"Txn", false}, {"DeleteRange", true}, {"Put", true}, {"Txn", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := newVec(), newVec()
			o := observers(got, func(kind, success string) []string { return []string{kind, success} })
			for i, x := range tt.obs {
				o.with(x).Observe(float64(i))
				want.WithLabelValues(x.kind, fmt.Sprint(x.ok)).Observe(float64(i))
			}
			if g, w := testutil.CollectAndCount(got), testutil.CollectAndCount(want); g != w {
				t.Fatalf("%d series, want %d", g, w)
			}
			if gm, wm := histogramSeries(t, got), histogramSeries(t, want); gm != wm {
				t.Fatalf("series differ:\n got %v\nwant %v", gm, wm)
			}
		})
	}
}

func TestObserversConcurrentUse(t *testing.T) {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "t_seconds", Help: "h"}, []string{"type", "success"})
	o := observers(vec, func(kind, success string) []string { return []string{kind, success} })
	kinds := []string{"Range", "Put", "Txn", "DeleteRange"}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				o.with(outcome{kinds[(g+i)%len(kinds)], i%3 != 0}).Observe(1)
			}
		}(g)
	}
	wg.Wait()
	if n := testutil.CollectAndCount(vec); n != 2*len(kinds) {
		t.Fatalf("%d series, want %d", n, 2*len(kinds))
	}
	total := 0
	for _, k := range kinds {
		for _, ok := range []bool{true, false} {
			total += int(histogramCount(t, vec.WithLabelValues(k, fmt.Sprint(ok)).(prometheus.Histogram)))
		}
	}
	if total != 8000 {
		t.Fatalf("%d observations, want 8000", total)
	}
}

// Label values a client chooses (its API version) are kept only up to maxChildren; past that
// the counter still counts each one.
func TestChildrenBoundedForClientChosenLabels(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_total", Help: "h"}, []string{"type", "client_api_version"})
	c := newChildren(func(l [2]string) prometheus.Counter { return vec.WithLabelValues(l[0], l[1]) })
	n := maxChildren * 3
	for i := 0; i < n; i++ {
		for j := 0; j < 2; j++ {
			c.with([2]string{"unary", fmt.Sprintf("3.%d", i)}).Inc()
		}
	}
	if kept := len(*c.m.Load()); kept != maxChildren {
		t.Fatalf("kept %d children, want %d", kept, maxChildren)
	}
	if got := testutil.CollectAndCount(vec); got != n {
		t.Fatalf("%d series, want %d", got, n)
	}
	for _, i := range []int{0, maxChildren - 1, maxChildren, n - 1} {
		if v := testutil.ToFloat64(vec.WithLabelValues("unary", fmt.Sprintf("3.%d", i))); v != 2 {
			t.Fatalf("version 3.%d counted %v, want 2", i, v)
		}
	}
}

// histogramSeries is what c's series hold, as text, without when each was made.
func histogramSeries(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(c)
	fams, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.Metric {
			m.Histogram.CreatedTimestamp = nil
		}
	}
	return fmt.Sprint(fams)
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
