package membership

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"

	"etcdx/server/backend"
	"etcdx/server/schema"
)

// Upstream etcd 3.6.16 assigned b5179d13d0285315 to a member with peer URL
// http://127.0.0.1:24380 and the default token; the same flags must give the same ID here.
func TestMemberIDMatchesUpstream(t *testing.T) {
	if got := MemberID([]string{"http://127.0.0.1:24380"}, "etcd-cluster"); got != 0xb5179d13d0285315 {
		t.Fatalf("member ID = %x, want b5179d13d0285315", got)
	}
	a := MemberID([]string{"http://b:2380", "http://a:2380"}, "t")
	if b := MemberID([]string{"http://a:2380", "http://b:2380"}, "t"); a != b {
		t.Fatal("member ID depends on peer URL order")
	}
	if MemberID([]string{"http://a:2380"}, "t1") == MemberID([]string{"http://a:2380"}, "t2") {
		t.Fatal("member ID ignores the cluster token")
	}
	if ClusterID([]uint64{1, 2, 3}) != ClusterID([]uint64{3, 1, 2}) {
		t.Fatal("cluster ID depends on member order")
	}
}

func TestParseInitialCluster(t *testing.T) {
	got, err := ParseInitialCluster("a=http://h:2,b=http://h:3, a=http://h:1")
	if err != nil || len(got) != 2 || strings.Join(got["a"], " ") != "http://h:1 http://h:2" {
		t.Fatalf("got %v, %v", got, err)
	}
	for in, want := range map[string]string{
		"":               "empty initial cluster",
		"a":              `"a" is not of the form name=url`,
		"=http://h:1":    "is not of the form name=url",
		"a=ftp://h:1":    "scheme must be http, https, unix, or unixs",
		"a=http://h":     "missing port",
		"a=http://h:1/x": "must not have a path",
		"a=http://":      "has no host:port",
	} {
		if _, err := ParseInitialCluster(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseInitialCluster(%q) = %v; want %q", in, err, want)
		}
	}
}

func TestNewInitial(t *testing.T) {
	cluster := map[string][]string{"b": {"http://h:2"}, "a": {"http://h:1"}, "c": {"http://h:3"}}
	in, err := NewInitial("b", []string{"http://h:2"}, cluster, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Members) != 3 || in.Members[0].Name != "a" || in.Members[2].Name != "c" {
		t.Fatalf("members not in name order: %+v", in.Members)
	}
	if in.SelfID != MemberID([]string{"http://h:2"}, "tok") || in.SelfID != in.Members[1].ID {
		t.Fatalf("self ID %x", in.SelfID)
	}
	if in.ClusterID != ClusterID([]uint64{in.Members[0].ID, in.Members[1].ID, in.Members[2].ID}) {
		t.Fatal("cluster ID is not derived from the member IDs")
	}
	ents, err := in.BootstrapEntries()
	if err != nil || len(ents) != 3 || ents[2].Index != 3 || ents[0].Term != 1 {
		t.Fatalf("bootstrap entries %+v, %v", ents, err)
	}
	var cc raftpb.ConfChange
	if err := cc.Unmarshal(ents[0].Data); err != nil {
		t.Fatal(err)
	}
	m, promote, err := DecodeConfChange(cc)
	if err != nil || promote || m.Name != "a" || m.ID != in.Members[0].ID || cc.Type != raftpb.ConfChangeAddNode {
		t.Fatalf("first entry adds %+v (%v)", m, err)
	}

	_, err = NewInitial("d", []string{"http://h:4"}, cluster, "tok")
	var fe *FlagsError
	if !errors.As(err, &fe) || fe.InCluster != nil || err.Error() != `couldn't find local name "d" in the initial cluster configuration` {
		t.Errorf("missing name: %v", err)
	}
	if _, err := NewInitial("a", []string{"http://h:9"}, cluster, "tok"); err == nil || !strings.Contains(err.Error(), "--initial-cluster has a=[http://h:1] but missing from --initial-advertise-peer-urls=[http://h:9]") {
		t.Errorf("mismatched URLs: %v", err)
	}
}

func testBackend(t *testing.T) *backend.Backend {
	t.Helper()
	be, err := backend.Open(backend.Config{Path: filepath.Join(t.TempDir(), "db"), Buckets: schema.Buckets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

func confChange(typ raftpb.ConfChangeType, m Member) (raftpb.ConfChange, *Member) {
	ctx, _ := ConfChangeContext(m)
	cc := raftpb.ConfChange{Type: typ, NodeID: m.ID, Context: ctx}
	mem, _, _ := DecodeConfChange(cc)
	return cc, mem
}

// upstreamPromotion is a promotion as upstream proposes it: the context holds only the ID and
// the isPromote flag.
func upstreamPromotion(id uint64) (raftpb.ConfChange, *Member, bool) {
	cc := raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: id,
		Context: []byte(fmt.Sprintf(`{"id":%d,"peerURLs":null,"isPromote":true}`, id))}
	mem, promote, _ := DecodeConfChange(cc)
	return cc, mem, promote
}

// Every refusal a conf change can meet when it applies, in upstream's words.
func TestValidateConfChange(t *testing.T) {
	ms := FromState(State{Members: []Member{
		{ID: 1, PeerURLs: []string{"http://h:1"}, Name: "a"},
		{ID: 2, PeerURLs: []string{"http://h:2"}, IsLearner: true},
	}, Removed: []uint64{9}})
	cases := []struct {
		name string
		typ  raftpb.ConfChangeType
		m    Member
		want error
	}{
		{"new voter", raftpb.ConfChangeAddNode, Member{ID: 3, PeerURLs: []string{"http://h:3"}}, nil},
		{"adding an existing learner as a voter", raftpb.ConfChangeAddNode, Member{ID: 2, PeerURLs: []string{"http://h:2"}}, ErrMemberExist},
		{"existing voter", raftpb.ConfChangeAddNode, Member{ID: 1, PeerURLs: []string{"http://h:1"}}, ErrMemberExist},
		{"existing learner", raftpb.ConfChangeAddLearnerNode, Member{ID: 2, PeerURLs: []string{"http://h:2"}}, ErrMemberExist},
		{"second learner", raftpb.ConfChangeAddLearnerNode, Member{ID: 4, PeerURLs: []string{"http://h:4"}}, ErrTooManyLearners},
		{"taken peer URL", raftpb.ConfChangeAddNode, Member{ID: 5, PeerURLs: []string{"http://h:1"}}, ErrPeerURLExist},
		{"removed ID", raftpb.ConfChangeAddNode, Member{ID: 9, PeerURLs: []string{"http://h:9"}}, ErrIDRemoved},
		{"remove unknown", raftpb.ConfChangeRemoveNode, Member{ID: 7}, ErrMemberNotFound},
		{"update unknown", raftpb.ConfChangeUpdateNode, Member{ID: 7}, ErrMemberNotFound},
		{"remove known", raftpb.ConfChangeRemoveNode, Member{ID: 1}, nil},
	}
	// --max-learners 2 lets a second learner in.
	cc, mem := confChange(raftpb.ConfChangeAddLearnerNode, Member{ID: 4, PeerURLs: []string{"http://h:4"}})
	if err := ms.Validate(cc, mem, false, 2); err != nil {
		t.Errorf("a second learner with --max-learners 2: %v", err)
	}
	for _, c := range cases {
		cc, mem := confChange(c.typ, c.m)
		if err := ms.Validate(cc, mem, false, DefaultMaxLearners); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// Promotions, as upstream encodes them.
	for id, want := range map[uint64]error{2: nil, 1: ErrNotLearner, 7: ErrMemberNotFound} {
		cc, mem, promote := upstreamPromotion(id)
		if !promote {
			t.Fatal("isPromote not read")
		}
		if err := ms.Validate(cc, mem, promote, DefaultMaxLearners); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("promotion of %d: %v, want %v", id, err, want)
		}
	}
	// Ours writes the flag too, and the member's JSON as upstream's context carries it.
	ctx, _ := PromoteContext(Member{ID: 2, PeerURLs: []string{"http://h:2"}})
	if !strings.Contains(string(ctx), `"isPromote":true`) || !strings.Contains(string(ctx), `"peerURLs":["http://h:2"]`) {
		t.Errorf("promotion context %s", ctx)
	}
	texts := map[error]string{
		ErrMemberNotFound: "etcdserver: member not found", ErrMemberExist: "etcdserver: member ID already exist",
		ErrPeerURLExist: "etcdserver: Peer URLs already exists", ErrIDRemoved: "etcdserver: member ID has been removed",
		ErrNotLearner: "etcdserver: can only promote a learner member", ErrTooManyLearners: "etcdserver: too many learner members in cluster",
		ErrLearnerNotReady: "etcdserver: can only promote a learner member which is in sync with leader",
	}
	for err, want := range texts {
		if err.Error() != want {
			t.Errorf("%q is not upstream's %q", err, want)
		}
	}
}

// A promotion and a URL update keep what the member published; a removal is remembered.
func TestApplyKeepsPublishedAttributes(t *testing.T) {
	ms := FromState(State{Members: []Member{{ID: 2, PeerURLs: []string{"http://h:2"}, IsLearner: true, Name: "b", ClientURLs: []string{"http://h:12"}}}})
	cc, mem, _ := upstreamPromotion(2)
	rec, removed := ms.Apply(cc, mem)
	if removed || rec.IsLearner || rec.Name != "b" || len(rec.ClientURLs) != 1 || len(rec.PeerURLs) != 1 {
		t.Fatalf("promotion left %+v", rec)
	}
	cc, mem = confChange(raftpb.ConfChangeUpdateNode, Member{ID: 2, PeerURLs: []string{"http://h:22"}})
	if rec, _ = ms.Apply(cc, mem); rec.Name != "b" || rec.PeerURLs[0] != "http://h:22" || rec.IsLearner {
		t.Fatalf("update left %+v", rec)
	}
	cc, mem = confChange(raftpb.ConfChangeRemoveNode, Member{ID: 2})
	if _, removed = ms.Apply(cc, mem); !removed || ms.Get(2) != nil || !ms.IsRemoved(2) {
		t.Fatal("removal not recorded")
	}
}

// The stored membership is upstream's layout: JSON under the hex ID, "removed" for removed IDs.
func TestStoredMembershipRoundTrip(t *testing.T) {
	be := testBackend(t)
	ms, err := Load(be, 0xc1)
	if err != nil {
		t.Fatal(err)
	}
	b := be.Batch()
	if err := ms.Save(b, &Member{ID: 0xab, PeerURLs: []string{"http://h:1"}, Name: "a", ServerVersion: "3.6.0"}); err != nil {
		t.Fatal(err)
	}
	if err := ms.Save(b, &Member{ID: 0xcd, PeerURLs: []string{"http://h:2"}}); err != nil {
		t.Fatal(err)
	}
	if err := ms.Remove(b, 0xcd); err != nil {
		t.Fatal(err)
	}
	b.Unlock()
	if err := be.Commit(); err != nil {
		t.Fatal(err)
	}
	be.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket(schema.Members).Get([]byte("ab"))); v != `{"id":171,"peerURLs":["http://h:1"],"name":"a","serverVersion":"3.6.0"}` {
			t.Errorf("stored member %s", v)
		}
		if v := string(tx.Bucket(schema.MembersRemoved).Get([]byte("cd"))); v != "removed" {
			t.Errorf("removed marker %q", v)
		}
		return nil
	})
	again, err := Load(be, 0xc1)
	if err != nil {
		t.Fatal(err)
	}
	if l := again.List(); len(l) != 1 || l[0].Name != "a" || !again.IsRemoved(0xcd) || again.ClusterID() != 0xc1 {
		t.Fatalf("reloaded %+v", l)
	}
	if st := FromState(again.State()); len(st.List()) != 1 || !st.IsRemoved(0xcd) {
		t.Fatal("snapshot state does not round-trip")
	}
}

// The member's version rides in an extra field of upstream's attributes message: it must survive
// the raft entry's encoding, and the known fields must read as upstream writes them.
func TestPublishedVersionSurvivesTheRaftEntry(t *testing.T) {
	r := &pb.InternalRaftRequest{ClusterMemberAttrSet: Publish(0xabc, "m1", []string{"http://127.0.0.1:2379"}, "3.6.0")}
	data, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var got pb.InternalRaftRequest
	if err := got.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	a := got.ClusterMemberAttrSet.MemberAttributes
	if a.Name != "m1" || len(a.ClientUrls) != 1 || got.ClusterMemberAttrSet.Member_ID != 0xabc {
		t.Fatalf("upstream fields changed: %+v", got.ClusterMemberAttrSet)
	}
	if v := PublishedVersion(a); v != "3.6.0" {
		t.Fatalf("version read back as %q", v)
	}
	a.XXX_unrecognized = nil // as upstream writes it
	if v := PublishedVersion(a); v != "" {
		t.Fatalf("an upstream entry yields version %q", v)
	}
	a.XXX_unrecognized = []byte{0xff, 0xff}
	if v := PublishedVersion(a); v != "" {
		t.Fatalf("garbage yields version %q", v)
	}
}
