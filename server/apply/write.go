package apply

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/server/mvcc"
)

// Put applies r in w: with ignore_value or ignore_lease it keeps the key's value or lease (the
// key must exist); the lease it ends on must exist.
func Put(w Writer, les Leases, r *pb.PutRequest) (*pb.PutResponse, error) {
	resp := &pb.PutResponse{Header: &pb.ResponseHeader{}}
	val, lease := r.Value, r.Lease
	var prev *mvccpb.KeyValue
	if r.IgnoreValue || r.IgnoreLease || r.PrevKv {
		rr, err := w.Range(r.Key, nil, mvcc.RangeOptions{})
		if err != nil {
			return nil, err
		}
		if len(rr.KVs) == 1 {
			prev = &rr.KVs[0]
		}
	}
	if r.IgnoreValue || r.IgnoreLease {
		if prev == nil {
			return nil, ErrKeyNotFound
		}
		if r.IgnoreValue {
			val = prev.Value
		}
		if r.IgnoreLease {
			lease = prev.Lease
		}
	}
	if lease != 0 && !les.Exists(lease) {
		return nil, ErrLeaseNotFound
	}
	if r.PrevKv && prev != nil {
		resp.PrevKv = prev
	}
	if err := w.Put(r.Key, val, lease); err != nil {
		return nil, err
	}
	resp.Header.Revision = w.Rev()
	return resp, nil
}

// DeleteRange applies r in w.
func DeleteRange(w Writer, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	resp := &pb.DeleteRangeResponse{Header: &pb.ResponseHeader{}}
	end := GteRange(r.RangeEnd)
	if r.PrevKv {
		rr, err := w.Range(r.Key, end, mvcc.RangeOptions{})
		if err != nil {
			return nil, err
		}
		for i := range rr.KVs {
			resp.PrevKvs = append(resp.PrevKvs, &rr.KVs[i])
		}
	}
	n, err := w.DeleteRange(r.Key, end)
	if err != nil {
		return nil, err
	}
	resp.Deleted = n
	resp.Header.Revision = w.Rev()
	return resp, nil
}
