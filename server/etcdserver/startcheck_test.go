package etcdserver

import (
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func TestCheckLogCoversDB(t *testing.T) {
	ents := func(from, to uint64) []raftpb.Entry {
		var es []raftpb.Entry
		for i := from; i <= to; i++ {
			es = append(es, raftpb.Entry{Index: i, Term: 2})
		}
		return es
	}
	cases := []struct {
		name          string
		st            raftpb.HardState
		snap          uint64
		ents          []raftpb.Entry
		cindex, cterm uint64
		want          string // "" means accepted
	}{
		{"database behind the log (normal restart)", raftpb.HardState{Term: 2, Commit: 100}, 0, ents(1, 120), 90, 2, ""},
		{"database at the commit index", raftpb.HardState{Term: 2, Commit: 100}, 0, ents(1, 100), 100, 2, ""},
		{"fresh restore", raftpb.HardState{Term: 1, Commit: 3}, 0, ents(1, 3), 3, 1, ""},
		{"empty data dir", raftpb.HardState{}, 0, nil, 0, 0, ""},
		{"commit index not synced before a power cut", raftpb.HardState{Term: 2, Commit: 1928}, 0, ents(1, 1929), 1929, 2, ""},
		// make sim, seed 541: a snapshot taken at the last entry, the commit-only hard state after
		// it not synced, then a power cut: no entry follows the snapshot, and the WAL still holds
		// the log up to it.
		{"snapshot at the last entry, commit not synced past it", raftpb.HardState{Term: 2, Commit: 1501}, 1503, nil, 1503, 2, ""},
		{"WAL cut short", raftpb.HardState{Term: 2, Commit: 868}, 0, ents(1, 870), 10249, 2,
			"backend.ConsistentIndex (10249) must be <= the WAL's last index (870): the database has applied the log up to index 10249 but the WAL in /d/member/wal ends at index 870 (commit index 868)"},
		{"WAL with no state at all", raftpb.HardState{}, 0, nil, 57, 3, "backend.ConsistentIndex (57) must be <= the WAL's last index (0)"},
		{"WAL from an older term", raftpb.HardState{Term: 2, Commit: 100}, 0, ents(1, 100), 100, 5, "backend.Term (5) must be <= WAL.HardState.term (2)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLogCoversDB(0x8e9e05c52164694d, "/d/member/wal", tc.st, tc.snap, tc.ents, func() (uint64, uint64) { return tc.cindex, tc.cterm })
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "etcdctl member remove 8e9e05c52164694d") ||
				!strings.Contains(err.Error(), "etcdutl snapshot restore") {
				t.Fatalf("error %q, want it to contain %q and the repair", err, tc.want)
			}
		})
	}
}
