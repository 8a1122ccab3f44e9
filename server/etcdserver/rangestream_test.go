package etcdserver

import "testing"

func TestNextChunkKeys(t *testing.T) {
	const target = 1000
	for _, c := range []struct {
		last      int64
		lastBytes int
		want      int64
	}{
		{10, 100, 20},  // far below the target: double
		{10, 499, 20},  // just below half
		{10, 500, 10},  // from half ...
		{10, 2000, 10}, // ... to twice the target: keep
		{10, 2001, 5},  // above twice: halve
		{1, 5000, 1},   // never 0 (no limit)
		{0, 5000, 1},   // nor from 0
		{1 << 40, 10, 1 << 41},
	} {
		if got := nextChunkKeys(c.last, c.lastBytes, target); got != c.want {
			t.Errorf("nextChunkKeys(%d, %d, %d) = %d, want %d", c.last, c.lastBytes, target, got, c.want)
		}
	}
}
