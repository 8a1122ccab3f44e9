package offline

import (
	"net/http"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
)

// TestV2CustomOfWALEntries: the v2 requests after the newest snapshot that upstream 3.6 would
// refuse to replay are found bare (as 3.5 proposes them) and inside a v3 request's V2 field (as
// upstream's check reads them too); a member's attributes and the cluster version are not
// custom; v3 requests are not v2 requests.
func TestV2CustomOfWALEntries(t *testing.T) {
	bare := func(r pb.Request) []byte {
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	wrapped := func(r pb.Request) []byte {
		b, err := (&pb.InternalRaftRequest{V2: &r}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	v3put, err := (&pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	custom := pb.Request{Method: http.MethodPut, Path: "/1/foo", Val: "bar"}
	version := pb.Request{Method: http.MethodPut, Path: "/0/version", Val: "3.5.0"}
	attrs := pb.Request{Method: http.MethodPut, Path: "/0/members/8e9e05c52164694d/attributes", Val: `{"name":"a"}`}
	for _, c := range []struct {
		name        string
		data        [][]byte
		wal         bool
		v2ReqsFound int
	}{
		{"v3 only", [][]byte{v3put}, false, 0},
		{"bare membership", [][]byte{bare(version), bare(attrs)}, false, 2},
		{"wrapped membership", [][]byte{wrapped(version), wrapped(attrs)}, false, 2},
		{"bare custom", [][]byte{v3put, bare(custom)}, true, 1},
		{"wrapped custom", [][]byte{v3put, wrapped(custom)}, true, 1},
		{"wrapped sync", [][]byte{wrapped(pb.Request{Method: "SYNC", Time: 1})}, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v walView
			for i, d := range c.data {
				v.ents = append(v.ents, raftpb.Entry{Index: uint64(i + 1), Term: 1, Type: raftpb.EntryNormal, Data: d})
			}
			got, err := v2CustomOf(v)
			if err != nil {
				t.Fatal(err)
			}
			if got.WAL != c.wal || got.Entries != c.v2ReqsFound || got.Store {
				t.Fatalf("got %+v, want WAL %v and %d v2 requests", got, c.wal, c.v2ReqsFound)
			}
		})
	}
	t.Run("undecodable", func(t *testing.T) {
		v := walView{ents: []raftpb.Entry{{Index: 7, Term: 1, Data: []byte{0xff, 0xff, 0xff}}}}
		if _, err := v2CustomOf(v); err == nil {
			t.Fatal("an entry neither form decodes was passed over")
		}
	})
}
