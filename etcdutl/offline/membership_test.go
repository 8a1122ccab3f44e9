package offline

import (
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/backend"
	"etcdx/server/membership"
	"etcdx/server/schema"
	"etcdx/server/wal"
)

// change is one committed conf change of the test's log.
type change struct {
	typ     raftpb.ConfChangeType
	m       membership.Member
	promote bool
}

// writeDataDir makes a data dir whose WAL holds changes (committed) and whose database's
// members buckets hold v3: the two records a 3.5 member keeps, disagreeing as the test says.
func writeDataDir(t *testing.T, changes []change, v3 []membership.Member) string {
	t.Helper()
	dir := t.TempDir()
	w, err := wal.Create(schema.WALDir(dir), schema.WALMetadata{NodeID: 2, ClusterID: 0xc1}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	var ents []raftpb.Entry
	for i, c := range changes {
		ctx, err := membership.ConfChangeContext(c.m)
		if c.promote {
			ctx, err = membership.PromoteContext(c.m)
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := (&raftpb.ConfChange{Type: c.typ, NodeID: c.m.ID, Context: ctx}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		ents = append(ents, raftpb.Entry{Type: raftpb.EntryConfChange, Term: 1, Index: uint64(i + 1), Data: data})
	}
	// One more change past the commit index: not in effect, so not counted.
	late, _ := (&raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode, NodeID: 1}).Marshal()
	ents = append(ents, raftpb.Entry{Type: raftpb.EntryConfChange, Term: 1, Index: uint64(len(changes) + 1), Data: late})
	if err := w.Save(raftpb.HardState{Term: 1, Commit: uint64(len(changes))}, ents); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(schema.SnapDir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := backend.OpenFile(schema.BackendPath(dir), &bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return membership.Rewrite(tx, v3) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func member(id uint64, name string, learner bool) membership.Member {
	return membership.Member{ID: id, Name: name, PeerURLs: []string{"http://" + name + ":2380"}, IsLearner: learner}
}

func ids(ms []membership.Member) []uint64 {
	var out []uint64
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func TestReadMembershipsFindsDisagreements(t *testing.T) {
	m1, m2, m3, m4 := member(1, "m1", false), member(2, "m2", false), member(3, "m3", false), member(4, "m4", true)
	history := []change{
		{raftpb.ConfChangeAddNode, m1, false},
		{raftpb.ConfChangeAddNode, m2, false},
		{raftpb.ConfChangeAddNode, m3, false},
		{raftpb.ConfChangeAddLearnerNode, m4, false},
		{raftpb.ConfChangeAddNode, membership.Member{ID: 4}, true}, // m4 promoted
		{raftpb.ConfChangeRemoveNode, membership.Member{ID: 3}, false},
	}
	promoted := m4
	promoted.IsLearner = false

	for _, tc := range []struct {
		name                      string
		v3                        []membership.Member
		zombies, demoted, missing []uint64
	}{
		{"the stores agree", []membership.Member{m1, m2, promoted}, nil, nil, nil},
		// etcd-io/etcd#19557: the promotion reached the v2 store only.
		{"a promotion the v3 store missed", []membership.Member{m1, m2, m4}, nil, []uint64{4}, nil},
		// etcd-io/etcd#20967: the removal reached the v2 store only.
		{"a removed member left in the v3 store", []membership.Member{m1, m2, m3, promoted}, []uint64{3}, nil, nil},
		{"a member the v3 store lacks", []membership.Member{m1, promoted}, nil, nil, []uint64{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := ReadMemberships(writeDataDir(t, history, tc.v3), "")
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(ms.V2.Members); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 {
				t.Fatalf("v2 members = %v, want [1 2 4] (m3 removed, m4 promoted; the uncommitted removal of m1 not counted)", got)
			}
			d := ms.Drift()
			for what, pair := range map[string][2][]uint64{"zombies": {ids(d.Zombies), tc.zombies}, "demoted": {ids(d.Demoted), tc.demoted},
				"missing": {ids(d.Missing), tc.missing}} {
				if len(pair[0]) != len(pair[1]) || (len(pair[0]) > 0 && pair[0][0] != pair[1][0]) {
					t.Errorf("%s = %v, want %v", what, pair[0], pair[1])
				}
			}
			if d.Empty() != (tc.zombies == nil && tc.demoted == nil && tc.missing == nil) {
				t.Errorf("Empty() = %v", d.Empty())
			}
		})
	}
}

func TestReadMembershipsRefusesWhatIsNoDataDir(t *testing.T) {
	if _, err := ReadMemberships(t.TempDir(), ""); err == nil {
		t.Fatal("an empty directory was read as a data dir")
	}
}

func TestSurveyDataDir(t *testing.T) {
	m1, m2, m3 := member(1, "m1", false), member(2, "m2", false), member(3, "m3", false)
	history := []change{{raftpb.ConfChangeAddNode, m1, false}, {raftpb.ConfChangeAddNode, m2, false},
		{raftpb.ConfChangeAddNode, m3, false}, {raftpb.ConfChangeRemoveNode, membership.Member{ID: 3}, false}}
	s, err := SurveyDataDir(writeDataDir(t, history, []membership.Member{m1, m2, m3}), "")
	if err != nil {
		t.Fatal(err)
	}
	if s.MemberID != 2 || s.ClusterID != 0xc1 {
		t.Errorf("member %x of cluster %x, want 2 of c1 (the WAL's metadata)", s.MemberID, s.ClusterID)
	}
	if s.StorageVersion != "3.5" {
		t.Errorf("storage version %q, want 3.5 (none recorded)", s.StorageVersion)
	}
	if s.DBSize == 0 || s.V2Custom.Err() != nil {
		t.Errorf("db size %d, v2 custom %v", s.DBSize, s.V2Custom.Err())
	}
	if d := s.Memberships.Drift(); len(d.Zombies) != 1 || d.Zombies[0].ID != 3 {
		t.Errorf("zombies %v, want m3", ids(d.Zombies))
	}
}
