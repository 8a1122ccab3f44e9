package apply

import (
	"bytes"
	"cmp"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/server/mvcc"
)

// Range answers r in v.
func Range(v Reader, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	return RangeCounting(v, r, false)
}

// Filtered says r drops keys by their revisions, after the read.
func Filtered(r *pb.RangeRequest) bool {
	return r.MinModRevision != 0 || r.MaxModRevision != 0 || r.MinCreateRevision != 0 || r.MaxCreateRevision != 0
}

// Sorted says r asks for an order other than the store's (keys ascending, unsorted).
func Sorted(r *pb.RangeRequest) bool {
	return r.SortOrder != pb.RangeRequest_NONE || r.SortTarget != pb.RangeRequest_KEY
}

// RangeCounting is Range; with countToLimit an unsorted, unfiltered range counts keys only to
// one past its limit, and its Count means nothing (a RangeStream chunk's).
func RangeCounting(v Reader, r *pb.RangeRequest, countToLimit bool) (*pb.RangeResponse, error) {
	limit := r.Limit
	filtered, sorted := Filtered(r), Sorted(r)
	if sorted || filtered {
		limit = 0 // everything is needed before sorting or filtering
	}
	if limit > 0 {
		limit++ // one more tells whether there is more
	}
	rr, err := v.Range(r.Key, GteRange(r.RangeEnd), mvcc.RangeOptions{Limit: limit, Rev: r.Revision, Count: r.CountOnly,
		CountToLimit: countToLimit && limit > 0})
	if err != nil {
		return nil, err
	}
	kvs := rr.KVs
	if filtered {
		out := kvs[:0]
		for _, kv := range kvs {
			if r.MaxModRevision != 0 && kv.ModRevision > r.MaxModRevision ||
				r.MinModRevision != 0 && kv.ModRevision < r.MinModRevision ||
				r.MaxCreateRevision != 0 && kv.CreateRevision > r.MaxCreateRevision ||
				r.MinCreateRevision != 0 && kv.CreateRevision < r.MinCreateRevision {
				continue
			}
			out = append(out, kv)
		}
		kvs = out
	}
	order := r.SortOrder
	if r.SortTarget != pb.RangeRequest_KEY && order == pb.RangeRequest_NONE {
		order = pb.RangeRequest_ASCEND
	}
	if order != pb.RangeRequest_NONE {
		sortKVs(kvs, r.SortTarget, order == pb.RangeRequest_DESCEND)
	}
	resp := &pb.RangeResponse{Header: &pb.ResponseHeader{Revision: rr.Rev}, Count: int64(rr.Count)}
	if r.Limit > 0 && len(kvs) > int(r.Limit) {
		kvs = kvs[:r.Limit]
		resp.More = true
	}
	resp.Kvs = make([]*mvccpb.KeyValue, len(kvs))
	for i := range kvs {
		if r.KeysOnly {
			kvs[i].Value = nil
		}
		resp.Kvs[i] = &kvs[i]
	}
	return resp, nil
}

func sortKVs(kvs []mvccpb.KeyValue, target pb.RangeRequest_SortTarget, desc bool) {
	// byTarget orders by the sort target alone; keys break its ties, ascending in both orders
	// (the range read them in key order, and upstream's sort leaves tied keys where they were).
	byTarget := func(a, b *mvccpb.KeyValue) int {
		switch target {
		case pb.RangeRequest_VERSION:
			return cmp.Compare(a.Version, b.Version)
		case pb.RangeRequest_CREATE:
			return cmp.Compare(a.CreateRevision, b.CreateRevision)
		case pb.RangeRequest_MOD:
			return cmp.Compare(a.ModRevision, b.ModRevision)
		case pb.RangeRequest_VALUE:
			return bytes.Compare(a.Value, b.Value)
		}
		return bytes.Compare(a.Key, b.Key)
	}
	sort.SliceStable(kvs, func(i, j int) bool {
		c := byTarget(&kvs[i], &kvs[j])
		if desc {
			c = -c
		}
		if c == 0 {
			c = bytes.Compare(kvs[i].Key, kvs[j].Key)
		}
		return c < 0
	})
}
