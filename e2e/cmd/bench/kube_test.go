package main

import (
	"slices"
	"strings"
	"testing"

	"etcdx/e2e/kubeload"
)

func TestNextKubeProbe(t *testing.T) {
	ko := kubeOptions{factor: 1.5, bisect: 1}
	for _, c := range []struct {
		name                        string
		pass, fail, downs, halvings int
		want                        int
		ok                          bool
	}{
		{name: "the ramp never missed", pass: 20000, want: 0, ok: false},
		{name: "the start missed: one step down", fail: 8000, want: 5333, ok: true},
		{name: "still missing: further down", fail: 5333, downs: 1, want: 3555, ok: true},
		{name: "down as far as allowed", fail: 2370, downs: kubeMostDowns, ok: false},
		{name: "held below the start: halve the gap", pass: 5333, fail: 8000, downs: 1, want: 6532, ok: true},
		{name: "a gap to halve", pass: 11250, fail: 16875, want: 13778, ok: true},
		{name: "halved as often as asked", pass: 11250, fail: 13778, halvings: 1, ok: false},
		{name: "a gap of under one node in fifty", pass: 10000, fail: 10150, ok: false},
	} {
		n, ok := nextKubeProbe(c.pass, c.fail, c.downs, c.halvings, ko)
		if ok != c.ok || ok && n != c.want {
			t.Errorf("%s: nextKubeProbe(%d, %d, %d, %d) = %d, %v; want %d, %v", c.name, c.pass, c.fail, c.downs, c.halvings, n, ok, c.want, c.ok)
		}
	}
}

func TestNextKubeStep(t *testing.T) {
	ko := kubeOptions{factor: 1.5, most: 20000}
	var ramp []int
	for n, ok := 6000, true; ok; n, ok = nextKubeStep(n, ko) {
		ramp = append(ramp, n)
	}
	if want := []int{6000, 9000, 13500, 20000}; !slices.Equal(ramp, want) {
		t.Errorf("ramp from 6000 = %v, want %v (the last step clamped to --kube-most)", ramp, want)
	}
	for _, c := range []struct {
		n, want int
		ok      bool
	}{
		{1000, 1500, true},
		{19999, 20000, true},
		{20000, 0, false},
		{25000, 0, false}, // a start above --kube-most: the ramp has no step after it
	} {
		if got, ok := nextKubeStep(c.n, ko); got != c.want || ok != c.ok {
			t.Errorf("nextKubeStep(%d) = %d, %v; want %d, %v", c.n, got, ok, c.want, c.ok)
		}
	}
}

// TestKubeMarkdownSideThatNeverMissed: a side with no N that missed has no "smallest N that
// missed" (not 0), and its largest N is a floor, which the ratio row says.
func TestKubeMarkdownSideThatNeverMissed(t *testing.T) {
	ko := kubeOptions{shape: kubeload.Defaults(0), start: 6000, factor: 1.5, most: 20000, bisect: 1}
	r := report{subjects: []subject{{label: "ours"}, {label: "upstream"}}, kube: ko}
	got := map[string]map[string][]float64{
		"ours":     {figKubeN: {13500, 13500}},
		"upstream": {figKubeN: {7348, 7348}, figKubeFirstFail: {9000, 9000}},
	}
	md := r.kubeMarkdown(func(label, key string) []float64 { return got[label][key] }, "Run of now\n\n")
	for _, want := range []string{
		"| largest N (nodes) whose window held every SLO | 13500 | 7348 | 1.84 (1.84, 1.84), a floor: ours missed no N up to 20000 |",
		"| smallest N found that missed one | none up to 20000 | 9000 | - |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}
