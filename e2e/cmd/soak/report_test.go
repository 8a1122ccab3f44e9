package main

import (
	"math"
	"testing"
)

// TestTheilSen: the slope is the line's own, and one window far off the line (a defrag's p99)
// does not move it, where a least-squares fit would swing with it.
func TestTheilSen(t *testing.T) {
	minutes := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i) / 60
		}
		return xs
	}
	line := func(n int, at0, perHour float64) []float64 {
		ys := make([]float64, n)
		for i, x := range minutes(n) {
			ys[i] = at0 + perHour*x
		}
		return ys
	}
	withSpike := func(ys []float64, i int, v float64) []float64 {
		out := append([]float64(nil), ys...)
		out[i] = v
		return out
	}
	tests := []struct {
		name string
		xs   []float64
		ys   []float64
		want float64
	}{
		{"flat", minutes(30), line(30, 15, 0), 0},
		{"rising 10 an hour", minutes(30), line(30, 15, 10), 10},
		{"falling", minutes(30), line(30, 300, -60), -60},
		{"flat, one defrag window early", minutes(30), withSpike(line(30, 15, 0), 3, 986), 0},
		{"rising, one defrag window late", minutes(30), withSpike(line(30, 15, 10), 27, 986), 10},
		{"one point", minutes(1), line(1, 15, 0), 0},
		{"no points", nil, nil, 0},
		{"two points at one time", []float64{0.5, 0.5}, []float64{1, 9}, 0},
	}
	for _, tc := range tests {
		if got := theilSen(tc.xs, tc.ys); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: slope %v, want %v", tc.name, got, tc.want)
		}
	}
}
