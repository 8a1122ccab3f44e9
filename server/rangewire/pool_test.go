package rangewire

import "testing"

func TestRoundUp(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 0},
		{smallest - 1, smallest - 1},
		{smallest, smallest},
		{smallest + 1, 2 * smallest},
		{1 << 20, 1 << 20},
		{1<<20 + 1, 1<<20 + 64<<10},
		{5 << 20, 5 << 20},
		{5<<20 + 100, 5<<20 + 256<<10},
	} {
		if got := roundUp(tc.n); got != tc.want {
			t.Errorf("roundUp(%d) = %d, want %d", tc.n, got, tc.want)
		}
		if got := roundUp(tc.n); got < tc.n || tc.n >= smallest && got > tc.n+tc.n/8+smallest {
			t.Errorf("roundUp(%d) = %d: below n or more than an eighth above", tc.n, got)
		}
	}
}
