package etcdserver

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/version"
)

// The member's version rides in an extra field of upstream's attributes message: it must survive
// the raft entry's encoding, and the known fields must read as upstream writes them.
func TestMemberVersionSurvivesTheRaftEntry(t *testing.T) {
	r := &pb.InternalRaftRequest{ClusterMemberAttrSet: memberAttrs(0xabc, "m1", []string{"http://127.0.0.1:2379"})}
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
	if v := attrsVersion(a); v != version.Version {
		t.Fatalf("version read back as %q, want %q", v, version.Version)
	}
	a.XXX_unrecognized = nil // as upstream writes it
	if v := attrsVersion(a); v != "" {
		t.Fatalf("an upstream entry yields version %q", v)
	}
	a.XXX_unrecognized = []byte{0xff, 0xff}
	if v := attrsVersion(a); v != "" {
		t.Fatalf("garbage yields version %q", v)
	}
}
