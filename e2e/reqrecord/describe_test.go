package reqrecord

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestSpan(t *testing.T) {
	for _, c := range []struct{ key, end, want string }{
		{"/registry/pods/a", "", ""},
		{"/registry/pods/", "/registry/pods0", "prefix"},
		{"a", "\x00", "from"},
		{"a", "c", "range"},
		{"a\xff", "b", "prefix"},
	} {
		if got := span([]byte(c.key), []byte(c.end)); got != c.want {
			t.Errorf("span(%q, %q) = %q, want %q", c.key, c.end, got, c.want)
		}
	}
}

func TestResource(t *testing.T) {
	for _, c := range []struct {
		key, want string
		own       bool
	}{
		{"/registry/pods/ns/name", "pods", false},
		{"/registry/pods", "pods", true},
		{"/registry/pods/", "pods", true},
		{"/registry/minions/node-1", "minions", false},
		{"/registry/apiextensions.k8s.io/customresourcedefinitions/x", "apiextensions.k8s.io/customresourcedefinitions", false},
		{"/registry/apiextensions.k8s.io/customresourcedefinitions", "apiextensions.k8s.io/customresourcedefinitions", true},
		{"compact_rev_key", "compact_rev_key", false},
		{"/registry", "(all)", false},
	} {
		if got := Resource(c.key, "/registry"); got != c.want {
			t.Errorf("Resource(%q) = %q, want %q", c.key, got, c.want)
		}
		if got := isResourceKey(c.key, "/registry"); got != c.own {
			t.Errorf("isResourceKey(%q) = %v, want %v", c.key, got, c.own)
		}
	}
}

// TestDescribeTxn: kube-apiserver's update is "mod= ? put : range", keyed by its compare.
func TestDescribeTxn(t *testing.T) {
	r := &pb.TxnRequest{
		Compare: []*pb.Compare{{Target: pb.Compare_MOD, Result: pb.Compare_EQUAL, Key: []byte("/registry/pods/a/b")}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/registry/pods/a/b"), Value: make([]byte, 100), Lease: 7}}}},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("/registry/pods/a/b")}}}},
	}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	m := describeRequest("Txn", b, 0)
	if m.Shape != "mod= ? put : range" || m.Key != "/registry/pods/a/b" || m.ValueBytes != 100 || !m.Lease || m.Count != 2 {
		t.Errorf("got %+v", m)
	}
	// an answer that is not the method's message is described by its size only
	if m := describeAnswer("Txn", []byte{0xff, 0xff}, 0); m.Bytes != 2 || m.Shape != "" {
		t.Errorf("undecodable answer: %+v", m)
	}
}
