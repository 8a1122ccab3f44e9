package apply_test

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// The semantics of a Range, from the fixture (see state): what each field of the request does
// to the answer. Count is every key in the range at the revision, before limit and filters.
func TestRangeSemantics(t *testing.T) {
	st := newState(t)
	bs := func(s string) []byte { return []byte(s) }
	for _, c := range []struct {
		name string
		r    *pb.RangeRequest
		want string
	}{
		{"one key", &pb.RangeRequest{Key: bs("a")}, "rev=5 count=1 a=3@2/4/2"},
		{"a missing key", &pb.RangeRequest{Key: bs("z")}, "rev=5 count=0"},
		{"a range is [key, end)", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("c")}, "rev=5 count=2 a=3@2/4/2 b=2@3/3/1+100"},
		{"end \\x00 is every key from key on", &pb.RangeRequest{Key: bs("b"), RangeEnd: []byte{0}}, "rev=5 count=2 b=2@3/3/1+100 c=5@5/5/1"},
		{"key and end \\x00 is every key", &pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}}, "rev=5 count=3 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1"},
		{"a limit keeps the first keys, counts all and says more", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), Limit: 2}, "rev=5 count=3 more a=3@2/4/2 b=2@3/3/1+100"},
		{"a limit the keys fit is not more", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), Limit: 3}, "rev=5 count=3 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1"},
		{"count only", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), CountOnly: true}, "rev=5 count=3"},
		{"keys only", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("c"), KeysOnly: true}, "rev=5 count=2 a@2/4/2 b@3/3/1+100"},
		{"at a past revision", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), Revision: 3}, "rev=5 count=2 a=1@2/2/1 b=2@3/3/1+100"},
		{"at the current revision", &pb.RangeRequest{Key: bs("a"), Revision: 5}, "rev=5 count=1 a=3@2/4/2"},
		{"at a future revision", &pb.RangeRequest{Key: bs("a"), Revision: 6}, "error: mvcc: required revision is a future revision"},
		{"sorted by mod revision, descending", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), SortTarget: pb.RangeRequest_MOD, SortOrder: pb.RangeRequest_DESCEND}, "rev=5 count=3 c=5@5/5/1 a=3@2/4/2 b=2@3/3/1+100"},
		{"a sort target without an order is ascending", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), SortTarget: pb.RangeRequest_VALUE}, "rev=5 count=3 b=2@3/3/1+100 a=3@2/4/2 c=5@5/5/1"},
		{"sorted by create revision", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), SortTarget: pb.RangeRequest_CREATE, SortOrder: pb.RangeRequest_ASCEND}, "rev=5 count=3 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1"},
		{"ties in the target keep key order, descending too", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), SortTarget: pb.RangeRequest_VERSION, SortOrder: pb.RangeRequest_DESCEND}, "rev=5 count=3 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1"},
		{"keys descending", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), SortOrder: pb.RangeRequest_DESCEND}, "rev=5 count=3 c=5@5/5/1 b=2@3/3/1+100 a=3@2/4/2"},
		{"a limit applies after the sort", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), Limit: 1, SortTarget: pb.RangeRequest_MOD, SortOrder: pb.RangeRequest_DESCEND}, "rev=5 count=3 more c=5@5/5/1"},
		{"min mod revision filters after counting", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), MinModRevision: 4}, "rev=5 count=3 a=3@2/4/2 c=5@5/5/1"},
		{"max mod revision", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), MaxModRevision: 3}, "rev=5 count=3 b=2@3/3/1+100"},
		{"min and max create revision", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), MinCreateRevision: 3, MaxCreateRevision: 4}, "rev=5 count=3 b=2@3/3/1+100"},
		{"a limit applies after the filter", &pb.RangeRequest{Key: bs("a"), RangeEnd: bs("d"), MinModRevision: 4, Limit: 1}, "rev=5 count=3 more a=3@2/4/2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := rangeResult(st.rangeAt(c.r)); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// Compaction: revisions below it are refused; at it, the keys' values as they were.
func TestRangeAtCompactedRevisions(t *testing.T) {
	st := newState(t)
	st.compact(4)
	for _, c := range []struct {
		rev  int64
		want string
	}{
		{3, "error: mvcc: required revision has been compacted"},
		{4, "rev=5 count=2 a=3@2/4/2 b=2@3/3/1+100"},
		{0, "rev=5 count=3 a=3@2/4/2 b=2@3/3/1+100 c=5@5/5/1"},
	} {
		if got := rangeResult(st.rangeAt(&pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("d"), Revision: c.rev})); got != c.want {
			t.Errorf("revision %d: got %s, want %s", c.rev, got, c.want)
		}
	}
}
