package etcdserver

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/mem"

	"etcdx/server/apply"
	"etcdx/server/mvcc"
	"etcdx/server/rangewire"
)

// rangeBufsKept is how much of the segments of sent range answers the member keeps for the next
// ones, so a stream or a paginated list reuses them (a kube-apiserver page of 500 objects of
// 10 KiB is 5 MiB; a RangeStream chunk is near --max-request-bytes). What is kept is live heap,
// which the collector lets grow twice over before it runs: 32 MiB kept put the peak resident
// memory of 64 concurrent 1,000-key ranges above upstream's.
const rangeBufsKept = 8 << 20

// RangeEncoded answers r as Range does, with the key-values in their wire encoding (for the
// gRPC API, which only sends them on): a plain range copies the stored records into the answer
// once, without decoding them.
func (s *Server) RangeEncoded(ctx context.Context, r *pb.RangeRequest) (*rangewire.Response, error) {
	var resp *rangewire.Response
	err := s.serveRange(ctx, r, func(v *mvcc.TxnRead) (err error) {
		resp, err = s.encodeRange(v, r, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// encodeRange reads r in v, encoded. Only a range answered in key order with whole key-values
// is the stored records as they are; the others (sorted, filtered, keys or count only) are read
// as Range reads them and encoded after. A chunk (of a RangeStream) counts the keys only to tell
// whether more follow: its Count is meaningless, and the range is not walked to its end for it.
func (s *Server) encodeRange(v *mvcc.TxnRead, r *pb.RangeRequest, chunk bool) (*rangewire.Response, error) {
	if r.CountOnly || r.KeysOnly || apply.Sorted(r) || apply.Filtered(r) {
		resp, err := apply.RangeCounting(v, r, chunk)
		if err != nil {
			return nil, err
		}
		kvs, err := s.rangeBufs.EncodeKVs(resp.Kvs)
		if err != nil {
			return nil, err
		}
		out := rangewire.NewResponse(kvs, len(resp.Kvs))
		out.Header, out.More, out.Count = resp.Header, resp.More, resp.Count
		if n := len(resp.Kvs); n > 0 {
			out.LastKey = resp.Kvs[n-1].Key
		}
		return out, nil
	}
	var kvs mem.BufferSlice
	n := 0
	rr, err := v.RangeRecords(r.Key, apply.GteRange(r.RangeEnd), mvcc.RangeOptions{Limit: r.Limit, Rev: r.Revision, CountToLimit: chunk && r.Limit > 0}, func(recs [][]byte) error {
		kvs, n = s.rangeBufs.EncodeRecords(recs), len(recs)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := rangewire.NewResponse(kvs, n)
	out.Header = &pb.ResponseHeader{Revision: rr.Rev}
	out.Count = int64(rr.Count)
	// Count is every live key in the range, or for a chunk at most one past the limit (nothing is
	// filtered), so there is more exactly when it exceeds the limit.
	out.More = r.Limit > 0 && out.Count > r.Limit
	out.LastKey = rr.LastKey
	return out, nil
}
