package v3rpc

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// FuzzRequestChecks: any bytes a client sends as a KV request decode into the request or fail to,
// and the checks run before serving answer every decoded request, never panicking (deeply
// nested transactions included).
func FuzzRequestChecks(f *testing.F) {
	txn := &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte("a"), Target: pb.Compare_VALUE, TargetUnion: &pb.Compare_Value{Value: []byte("1")}}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("a"), Value: []byte("2")}}}},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("a"), SortOrder: 9}}}},
		}}}},
	}
	b, err := txn.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	rr, _ := (&pb.RangeRequest{Key: []byte("k"), RangeEnd: []byte{0}, Limit: -1, SortTarget: 7}).Marshal()
	f.Add(rr)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var r pb.RangeRequest
		if r.Unmarshal(data) == nil {
			checkRange(&r)
		}
		var p pb.PutRequest
		if p.Unmarshal(data) == nil {
			checkPut(&p)
		}
		var d pb.DeleteRangeRequest
		if d.Unmarshal(data) == nil {
			checkDelete(&d)
		}
		var tx pb.TxnRequest
		if tx.Unmarshal(data) == nil {
			checkTxn(&tx, 128)
		}
	})
}
