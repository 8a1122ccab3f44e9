package etcdserver

import (
	"testing"
	"time"

	"go.etcd.io/raft/v3"
)

func TestPickTransferee(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	down := time.Time{}
	for _, c := range []struct {
		name  string
		cands []transfereeCandidate
		want  uint64
	}{
		{"no voters", nil, raft.None},
		{"every voter down", []transfereeCandidate{{1, 10, down}, {2, 10, down}}, raft.None},
		{"a stopped member as up to date as the live ones is passed over",
			[]transfereeCandidate{{1, 10, down}, {2, 10, t0.Add(time.Second)}, {3, 10, t0.Add(2 * time.Second)}}, 2},
		{"a stopped member ahead of the live ones is passed over", []transfereeCandidate{{1, 12, down}, {2, 10, t0}}, 2},
		{"the most up to date live voter", []transfereeCandidate{{1, 9, t0}, {2, 10, t0.Add(time.Hour)}}, 2},
		{"equal logs: the longest connected", []transfereeCandidate{{1, 10, t0.Add(time.Minute)}, {2, 10, t0}}, 2},
		{"equal logs and connections: the lowest ID", []transfereeCandidate{{3, 10, t0}, {2, 10, t0}}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pickTransferee(c.cands); got != c.want {
				t.Fatalf("pickTransferee = %d, want %d", got, c.want)
			}
			// The same whatever order the candidates come in.
			for i := 0; i < len(c.cands)/2; i++ {
				c.cands[i], c.cands[len(c.cands)-1-i] = c.cands[len(c.cands)-1-i], c.cands[i]
			}
			if got := pickTransferee(c.cands); got != c.want {
				t.Fatalf("reversed: pickTransferee = %d, want %d", got, c.want)
			}
		})
	}
}
