package v3rpc

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"etcdx/server/rangewire"
)

// header fills the parts of a response header that every response carries.
type header struct{ s Identity }

func (h header) fill(rh *pb.ResponseHeader) {
	if rh == nil {
		return
	}
	h.fillExceptRevision(rh)
	if rh.Revision == 0 {
		rh.Revision = h.s.KV().Rev()
	}
}

// fillExceptRevision is fill for the answers upstream gives no revision of the store: the
// Cluster service's, and a watch cancelled by compaction.
func (h header) fillExceptRevision(rh *pb.ResponseHeader) {
	rh.ClusterId = h.s.ClusterID()
	rh.MemberId = h.s.ID()
	rh.RaftTerm = h.s.Term()
}

type kvServer struct {
	pb.UnimplementedKVServer
	s   KV
	hdr header
}

func checkRange(r *pb.RangeRequest) error {
	if len(r.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if _, ok := pb.RangeRequest_SortOrder_name[int32(r.SortOrder)]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	if _, ok := pb.RangeRequest_SortTarget_name[int32(r.SortTarget)]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	return nil
}

func checkPut(r *pb.PutRequest) error {
	if len(r.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if r.IgnoreValue && len(r.Value) != 0 {
		return rpctypes.ErrGRPCValueProvided
	}
	if r.IgnoreLease && r.Lease != 0 {
		return rpctypes.ErrGRPCLeaseProvided
	}
	return nil
}

func checkDelete(r *pb.DeleteRangeRequest) error {
	if len(r.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	return nil
}

// Range answers with the key-values already in their wire encoding (see rangewire): the codec
// sends them as they are.
func (k *kvServer) Range(ctx context.Context, r *pb.RangeRequest) (*rangewire.Response, error) {
	if err := checkRange(r); err != nil {
		return nil, err
	}
	resp, err := k.s.RangeEncoded(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.hdr.fill(resp.Header)
	return resp, nil
}

func (k *kvServer) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := checkPut(r); err != nil {
		return nil, err
	}
	resp, err := k.s.Put(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.hdr.fill(resp.Header)
	return resp, nil
}

func (k *kvServer) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	if err := checkDelete(r); err != nil {
		return nil, err
	}
	resp, err := k.s.DeleteRange(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.hdr.fill(resp.Header)
	return resp, nil
}

// checkCompares refuses a compare without a key, as upstream.
func checkCompares(cmps []*pb.Compare) error {
	for _, c := range cmps {
		if len(c.Key) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
	}
	return nil
}

func (k *kvServer) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if err := checkTxn(r, int(k.s.Config().MaxTxnOps)); err != nil {
		return nil, err
	}
	resp, err := k.s.Txn(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	// Only the outer header is filled: upstream leaves each op's with its revision alone and a
	// nested transaction's empty.
	k.hdr.fill(resp.Header)
	return resp, nil
}

func (k *kvServer) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	resp, err := k.s.Compact(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.hdr.fill(resp.Header)
	return resp, nil
}
