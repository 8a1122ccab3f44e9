package kubeload

import (
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 200; i++ {
		xs = append(xs, time.Duration(201-i)*time.Millisecond)
	}
	s := summarize(xs)
	if s.Count != 200 || s.P50 != 101*time.Millisecond || s.P99 != 199*time.Millisecond || s.Max != 200*time.Millisecond {
		t.Errorf("got %+v", s)
	}
	if s := summarize(nil); s.Count != 0 || s.String() != "none" {
		t.Errorf("empty: %+v", s)
	}
}

func TestHolds(t *testing.T) {
	ok := func() Result {
		var r Result
		r.Classes[Mutating] = Summary{Count: 10, P99: 900 * time.Millisecond}
		r.Classes[Read] = Summary{Count: 10, P99: 10 * time.Millisecond}
		r.Classes[List] = Summary{Count: 1, P99: 29 * time.Second}
		r.Classes[Delivery] = Summary{Count: 10, P99: 4 * time.Second}
		return r
	}
	for _, c := range []struct {
		name   string
		change func(*Result)
		missed string // "" when the SLOs hold
	}{
		{"every class within its SLO", func(*Result) {}, ""},
		{"no list in the window", func(r *Result) { r.Classes[List] = Summary{} }, ""},
		{"slow writes", func(r *Result) { r.Classes[Mutating].P99 = 1100 * time.Millisecond }, "mutating p99"},
		{"slow reads", func(r *Result) { r.Classes[Read].P99 = 2 * time.Second }, "single-object read p99"},
		{"slow list", func(r *Result) { r.Classes[List].P99 = 31 * time.Second }, "full pod list p99"},
		{"late watch events", func(r *Result) { r.Classes[Delivery].P99 = 6 * time.Second }, "watch delivery p99"},
		{"a failed request", func(r *Result) { r.Failed, r.Errors = 1, []string{"boom"} }, "1 failed requests (boom)"},
		{"nothing written", func(r *Result) { r.Classes[Mutating] = Summary{} }, "no mutating request completed"},
	} {
		r := ok()
		c.change(&r)
		holds, why := r.Holds(KubernetesSLO)
		if holds != (c.missed == "") || !strings.Contains(why, c.missed) {
			t.Errorf("%s: holds %v, %q; want missed %q", c.name, holds, why, c.missed)
		}
	}
}

// TestWritesPerSecond: the write rate a shape sends, from its parts.
func TestWritesPerSecond(t *testing.T) {
	s := Defaults(1000)
	// leases 100/s, node status 16.7/s, 8.3 pod lives/s of 15.6 writes, 15 API-server writes per 10 s
	got := s.WritesPerSecond()
	want := 100 + 1000.0/60 + 1000*0.5/60*(2+6+7+0.6) + 1.5
	if d := got - want; d > 0.01 || d < -0.01 {
		t.Errorf("WritesPerSecond = %.2f, want %.2f", got, want)
	}
}
