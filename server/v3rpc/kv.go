package v3rpc

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"etcdx/server/etcdserver"
	"etcdx/server/rangewire"
)

// header fills the parts of a response header that every response carries.
type header struct{ s *etcdserver.Server }

func (h header) fill(rh *pb.ResponseHeader) {
	if rh == nil {
		return
	}
	rh.ClusterId = h.s.ClusterID()
	rh.MemberId = h.s.ID()
	rh.RaftTerm = h.s.Term()
	if rh.Revision == 0 {
		rh.Revision = h.s.KV().Rev()
	}
}

type kvServer struct {
	pb.UnimplementedKVServer
	s   *etcdserver.Server
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

func checkTxnOps(ops []*pb.RequestOp) error {
	for _, op := range ops {
		var err error
		switch {
		case op.GetRequestRange() != nil:
			err = checkRange(op.GetRequestRange())
		case op.GetRequestPut() != nil:
			err = checkPut(op.GetRequestPut())
		case op.GetRequestDeleteRange() != nil:
			err = checkDelete(op.GetRequestDeleteRange())
		case op.GetRequestTxn() != nil:
			t := op.GetRequestTxn()
			if err = checkCompares(t.Compare); err == nil {
				if err = checkTxnOps(t.Success); err == nil {
					err = checkTxnOps(t.Failure)
				}
			}
		}
		if err != nil {
			return err
		}
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
	if err := checkCompares(r.Compare); err != nil {
		return nil, err
	}
	if err := checkTxnOps(r.Success); err != nil {
		return nil, err
	}
	if err := checkTxnOps(r.Failure); err != nil {
		return nil, err
	}
	resp, err := k.s.Txn(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.fillTxn(resp)
	return resp, nil
}

func (k *kvServer) fillTxn(resp *pb.TxnResponse) {
	k.hdr.fill(resp.Header)
	for _, op := range resp.Responses {
		switch {
		case op.GetResponseRange() != nil:
			k.hdr.fill(op.GetResponseRange().Header)
		case op.GetResponsePut() != nil:
			k.hdr.fill(op.GetResponsePut().Header)
		case op.GetResponseDeleteRange() != nil:
			k.hdr.fill(op.GetResponseDeleteRange().Header)
		case op.GetResponseTxn() != nil:
			k.fillTxn(op.GetResponseTxn())
		}
	}
}

func (k *kvServer) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	resp, err := k.s.Compact(ctx, r)
	if err != nil {
		return nil, togRPCError(err)
	}
	k.hdr.fill(resp.Header)
	return resp, nil
}
