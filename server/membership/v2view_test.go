package membership

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func v2Change(t *testing.T, index uint64, typ raftpb.ConfChangeType, m Member, promote bool) raftpb.Entry {
	t.Helper()
	ctx, err := changeContext(m, promote)
	if err != nil {
		t.Fatal(err)
	}
	data, err := (&raftpb.ConfChange{Type: typ, NodeID: m.ID, Context: ctx}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return raftpb.Entry{Type: raftpb.EntryConfChange, Index: index, Term: 1, Data: data}
}

func TestReplayV2AndCompare(t *testing.T) {
	a, b, c := Member{ID: 1, PeerURLs: []string{"http://a"}}, Member{ID: 2, PeerURLs: []string{"http://b"}}, Member{ID: 3, PeerURLs: []string{"http://c"}}
	snapshot := State{Members: []Member{a, b}} // the v2 store of a snapshot at index 10
	ents := []raftpb.Entry{
		v2Change(t, 9, raftpb.ConfChangeRemoveNode, a, false), // before the snapshot: already in it
		v2Change(t, 11, raftpb.ConfChangeAddLearnerNode, c, false),
		v2Change(t, 12, raftpb.ConfChangeAddNode, Member{ID: 3}, true), // c promoted
		v2Change(t, 13, raftpb.ConfChangeAddNode, a, false),            // refused: a exists
		v2Change(t, 14, raftpb.ConfChangeRemoveNode, b, false),         // past upTo: not in effect
	}
	v2, err := ReplayV2(snapshot, ents, 10, 13)
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.Members) != 3 || v2.Members[2].ID != 3 || v2.Members[2].IsLearner {
		t.Fatalf("v2 view %+v, want a, b and c promoted", v2.Members)
	}
	if p := PromotedIn(ents, 10, 13); len(p) != 1 || !p[3] {
		t.Errorf("promoted in the WAL: %v, want c only", p)
	}
	if p := PromotedIn(ents, 12, 13); len(p) != 0 {
		t.Errorf("promoted after index 12: %v, want none", p)
	}
	learnerC := c
	learnerC.IsLearner = true
	zombie := Member{ID: 9}
	for _, tc := range []struct {
		name                      string
		v3                        []Member
		zombies, demoted, missing int
	}{
		{"agree", []Member{a, b, {ID: 3, PeerURLs: c.PeerURLs}}, 0, 0, 0},
		{"promotion missing from v3", []Member{a, b, learnerC}, 0, 1, 0},
		{"removed member still in v3", []Member{a, b, c, zombie}, 1, 0, 0},
		{"member missing from v3", []Member{a, c}, 0, 0, 1},
	} {
		d := Compare(v2, State{Members: tc.v3})
		if len(d.Zombies) != tc.zombies || len(d.Demoted) != tc.demoted || len(d.Missing) != tc.missing || d.Empty() != (tc.zombies+tc.demoted+tc.missing == 0) {
			t.Errorf("%s: drift %+v", tc.name, d)
		}
	}
}
