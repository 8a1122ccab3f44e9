package apply_test

import (
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/membershippb"

	"etcdx/server/apply"
)

// Apply is the one dispatch a member's apply loop and the stepped simulation share: each kind of
// key, compaction or lease request goes to its function in the caller's batch, and every other
// kind is left to the member. Each row starts from the fixture (revision 5, lease 100 holding b).
func TestApplyDispatchesEachKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *pb.InternalRaftRequest
		want string // handled, the answer's type or the error, key changes, the store's revision after
	}{
		{"put", &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("x"), Value: []byte("1")}},
			"handled *etcdserverpb.PutResponse changes=1 rev=6"},
		{"a put on a missing lease changes nothing", &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("x"), Lease: 9}},
			"handled error: lease not found changes=0 rev=5"},
		{"delete a range", &pb.InternalRaftRequest{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("a"), RangeEnd: []byte("c")}},
			"handled *etcdserverpb.DeleteRangeResponse changes=2 rev=6"},
		{"a txn's puts at one revision", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{putOp("x", "1", 0), putOp("y", "2", 0)}}},
			"handled *etcdserverpb.TxnResponse changes=2 rev=6"},
		{"a txn refused by its second op changes nothing", &pb.InternalRaftRequest{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{putOp("x", "1", 0), putOp("y", "2", 9)}}},
			"handled error: lease not found changes=0 rev=5"},
		{"compaction", &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: 3}},
			"handled *etcdserverpb.CompactionResponse changes=0 rev=5 compacting"},
		{"compaction at a future revision", &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: 9}},
			"handled error: mvcc: required revision is a future revision changes=0 rev=5"},
		{"lease grant", &pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{ID: 7, TTL: 30}},
			"handled *etcdserverpb.LeaseGrantResponse changes=0 rev=5"},
		{"lease revoke deletes its key", &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 100}},
			"handled *etcdserverpb.LeaseRevokeResponse changes=1 rev=6"},
		{"revoke of a missing lease", &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 9}},
			"handled error: lease not found changes=0 rev=5"},
		{"lease checkpoint", &pb.InternalRaftRequest{LeaseCheckpoint: &pb.LeaseCheckpointRequest{Checkpoints: []*pb.LeaseCheckpoint{{ID: 100, Remaining_TTL: 20}}}},
			"handled *etcdserverpb.LeaseCheckpointResponse changes=0 rev=5"},
		{"cluster version: the member's", &pb.InternalRaftRequest{ClusterVersionSet: &membershippb.ClusterVersionSetRequest{Ver: "3.6.0"}},
			"not handled rev=5"},
		{"alarm: the member's", &pb.InternalRaftRequest{Alarm: &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, Alarm: pb.AlarmType_NOSPACE}},
			"not handled rev=5"},
		{"auth: the member's", &pb.InternalRaftRequest{AuthEnable: &pb.AuthEnableRequest{}},
			"not handled rev=5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newState(t)
			b := st.be.Batch()
			res, ok := apply.Apply(b, st.kv, st.les, tc.req, true)
			if err := b.Unlock(); err != nil {
				t.Fatal(err)
			}
			got := "not handled"
			if ok {
				got = fmt.Sprintf("handled %T", res.Resp)
				if res.Err != nil {
					got = "handled error: " + res.Err.Error()
				}
				got += fmt.Sprintf(" changes=%d", res.Changes)
			}
			got += fmt.Sprintf(" rev=%d", st.kv.Rev())
			if res.Compacted != nil {
				<-res.Compacted
				got += " compacting"
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
