package etcdserver

import (
	"slices"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func TestSplitCommitted(t *testing.T) {
	ents := func(idx ...uint64) []raftpb.Entry {
		var es []raftpb.Entry
		for _, i := range idx {
			es = append(es, raftpb.Entry{Index: i, Term: 1})
		}
		return es
	}
	indexes := func(es []raftpb.Entry) []uint64 {
		var is []uint64
		for _, e := range es {
			is = append(is, e.Index)
		}
		return is
	}
	for _, tc := range []struct {
		name         string
		ents         []raftpb.Entry
		persisted    uint64
		snap         bool
		stable, rest []uint64
	}{
		{"all in the WAL (a leader's commit)", ents(5, 6, 7), 9, false, []uint64{5, 6, 7}, nil},
		{"none in the WAL (a follower learns the commit with the entries)", ents(8, 9), 7, false, nil, []uint64{8, 9}},
		{"some in the WAL", ents(6, 7, 8, 9), 7, false, []uint64{6, 7}, []uint64{8, 9}},
		{"exactly up to the last", ents(6, 7), 7, false, []uint64{6, 7}, nil},
		{"a snapshot first", ents(11, 12), 20, true, nil, []uint64{11, 12}},
		{"nothing committed", nil, 3, false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stable, rest := splitCommitted(tc.ents, tc.persisted, tc.snap)
			if got := indexes(stable); !slices.Equal(got, tc.stable) {
				t.Errorf("stable = %v, want %v", got, tc.stable)
			}
			if got := indexes(rest); !slices.Equal(got, tc.rest) {
				t.Errorf("rest = %v, want %v", got, tc.rest)
			}
		})
	}
}
