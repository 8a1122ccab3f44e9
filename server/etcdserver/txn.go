package etcdserver

import (
	"bytes"
	"errors"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/server/mvcc"
)

// A transaction is all or nothing. Which branch each transaction of a request takes (its own
// and every nested one's) is decided first, against the store as it was before the request,
// as upstream does: a nested compare does not see the writes of the ops before it. Then every
// op on those branches is checked against the same state; only when all would succeed does the
// first one change anything. An op that still fails after the checks is a storage failure,
// not a refusal (errTxnHalfApplied).

// errTxnHalfApplied marks a transaction that failed after it had begun to write: the caller
// must throw away its batch rather than commit part of a transaction.
var errTxnHalfApplied = errors.New("etcdserver: transaction failed after it had begun to write")

// txnView is what a transaction reads through: the kvView and the compaction point, both as
// they were before the transaction wrote anything.
type txnView interface {
	kvView
	CompactRev() int64
}

// txnPath appends to path the branch (true: success) of r and of every nested transaction on
// that branch, in the order they run.
func txnPath(v kvView, r *pb.TxnRequest, path []bool) ([]bool, error) {
	ok, err := evalCompares(v, r.Compare)
	if err != nil {
		return nil, err
	}
	path = append(path, ok)
	for _, op := range txnBranch(r, ok) {
		if t := op.GetRequestTxn(); t != nil {
			if path, err = txnPath(v, t, path); err != nil {
				return nil, err
			}
		}
	}
	return path, nil
}

func txnBranch(r *pb.TxnRequest, success bool) []*pb.RequestOp {
	if success {
		return r.Success
	}
	return r.Failure
}

// checkTxnBranch refuses r before anything of it applies: a range at a future or compacted
// revision, a put on an unknown lease, an ignore_value or ignore_lease put on a missing key,
// anywhere on the branches path picks. It returns the part of path after r's.
func (s *Server) checkTxnBranch(v txnView, r *pb.TxnRequest, path []bool) ([]bool, error) {
	ops := txnBranch(r, path[0])
	path = path[1:]
	for _, op := range ops {
		var err error
		switch x := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			err = checkRangeRevision(v, x.RequestRange.Revision)
		case *pb.RequestOp_RequestPut:
			err = s.checkPutApplies(v, x.RequestPut)
		case *pb.RequestOp_RequestDeleteRange:
		case *pb.RequestOp_RequestTxn:
			path, err = s.checkTxnBranch(v, x.RequestTxn, path)
		default:
			err = fmt.Errorf("etcdserver: unknown txn operation")
		}
		if err != nil {
			return nil, err
		}
	}
	return path, nil
}

// checkRangeRevision is the revision rule of a range inside a transaction, judged at the
// revision the transaction starts from.
func checkRangeRevision(v txnView, rev int64) error {
	switch {
	case rev == 0:
		return nil
	case rev > v.Rev():
		return mvcc.ErrFutureRev
	case rev < v.CompactRev():
		return mvcc.ErrCompacted
	}
	return nil
}

// checkPutApplies refuses a put that would fail when applied.
func (s *Server) checkPutApplies(v kvView, p *pb.PutRequest) error {
	if p.IgnoreValue || p.IgnoreLease {
		rr, err := v.Range(p.Key, nil, mvcc.RangeOptions{})
		if err != nil {
			return err
		}
		if len(rr.KVs) == 0 {
			return ErrKeyNotFound
		}
	}
	if p.Lease != 0 && !p.IgnoreLease && !s.les.Exists(p.Lease) {
		return errLeaseNotFound
	}
	return nil
}

// applyTxn runs a transaction that may write: decided and checked first, then applied. An
// error wrapping errTxnHalfApplied means txn holds part of it and must not be committed.
func (s *Server) applyTxn(txn *mvcc.TxnWrite, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	resp, err := s.runTxn(txn, txn, r)
	if err != nil && txn.Changes() > 0 {
		return nil, fmt.Errorf("%w: %w", errTxnHalfApplied, err)
	}
	return resp, err
}

// readOnlyTxn runs a transaction of ranges only in a read view.
func (s *Server) readOnlyTxn(v txnView, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	return s.runTxn(v, nil, r)
}

// runTxn decides every branch of r against v, checks every op on them, then runs them (writing
// through w, nil in a read view); the outer header carries the revision v reads at after.
func (s *Server) runTxn(v txnView, w *mvcc.TxnWrite, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	path, err := txnPath(v, r, nil)
	if err != nil {
		return nil, err
	}
	if _, err := s.checkTxnBranch(v, r, path); err != nil {
		return nil, err
	}
	run := txnRun{s: s, v: v, w: w, path: path}
	resp, err := run.txn(r)
	if err != nil {
		return nil, err
	}
	resp.Header = &pb.ResponseHeader{Revision: v.Rev()}
	return resp, nil
}

// txnRun applies the branches a path chose. w is nil in a read view (the branches then hold
// ranges only). Responses get upstream's headers: each op's carries only its revision, a nested
// transaction's none (the caller sets the outer one's).
type txnRun struct {
	s    *Server
	v    kvView
	w    *mvcc.TxnWrite
	path []bool
}

func (t *txnRun) txn(r *pb.TxnRequest) (*pb.TxnResponse, error) {
	ok := t.path[0]
	t.path = t.path[1:]
	ops := txnBranch(r, ok)
	resp := &pb.TxnResponse{Header: &pb.ResponseHeader{}, Succeeded: ok, Responses: make([]*pb.ResponseOp, 0, len(ops))}
	for _, op := range ops {
		ro, err := t.op(op)
		if err != nil {
			return nil, err
		}
		resp.Responses = append(resp.Responses, ro)
	}
	return resp, nil
}

func (t *txnRun) op(op *pb.RequestOp) (*pb.ResponseOp, error) {
	if x, ok := op.Request.(*pb.RequestOp_RequestRange); ok {
		rr, err := applyRange(t.v, x.RequestRange)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{ResponseRange: rr}}, nil
	}
	if x, ok := op.Request.(*pb.RequestOp_RequestTxn); ok {
		tr, err := t.txn(x.RequestTxn)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: tr}}, nil
	}
	if t.w == nil {
		return nil, fmt.Errorf("etcdserver: a write in a read-only transaction")
	}
	switch x := op.Request.(type) {
	case *pb.RequestOp_RequestPut:
		pr, err := t.s.applyPut(t.w, x.RequestPut)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: pr}}, nil
	case *pb.RequestOp_RequestDeleteRange:
		dr, err := applyDeleteRange(t.w, x.RequestDeleteRange)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: dr}}, nil
	}
	return nil, fmt.Errorf("etcdserver: unknown txn operation")
}

// evalCompares reports whether every compare holds against the view.
func evalCompares(v kvView, cmps []*pb.Compare) (bool, error) {
	for _, c := range cmps {
		if revisionCompare(c) {
			// One key's revisions or version: the index has them, the stored record is not read.
			var kv mvccpb.KeyValue
			kv.CreateRevision, kv.ModRevision, kv.Version, _ = v.KeyRevisions(c.Key)
			if !compareKV(c, &kv) {
				return false, nil
			}
			continue
		}
		rr, err := v.Range(c.Key, gteRange(c.RangeEnd), mvcc.RangeOptions{})
		if err != nil {
			return false, err
		}
		if len(rr.KVs) == 0 {
			if c.Target == pb.Compare_VALUE {
				return false, nil // a missing key has no value to compare
			}
			if !compareKV(c, &mvccpb.KeyValue{}) {
				return false, nil
			}
			continue
		}
		for i := range rr.KVs {
			if !compareKV(c, &rr.KVs[i]) {
				return false, nil
			}
		}
	}
	return true, nil
}

// revisionCompare says c compares one key's create or mod revision or version, which a missing
// key has as 0.
func revisionCompare(c *pb.Compare) bool {
	switch c.Target {
	case pb.Compare_CREATE, pb.Compare_MOD, pb.Compare_VERSION:
		return len(c.RangeEnd) == 0
	}
	return false
}

func compareKV(c *pb.Compare, kv *mvccpb.KeyValue) bool {
	var r int
	cmpInt := func(a, b int64) int {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	switch c.Target {
	case pb.Compare_VALUE:
		r = bytes.Compare(kv.Value, c.GetValue())
	case pb.Compare_VERSION:
		r = cmpInt(kv.Version, c.GetVersion())
	case pb.Compare_CREATE:
		r = cmpInt(kv.CreateRevision, c.GetCreateRevision())
	case pb.Compare_MOD:
		r = cmpInt(kv.ModRevision, c.GetModRevision())
	case pb.Compare_LEASE:
		r = cmpInt(kv.Lease, c.GetLease())
	}
	switch c.Result {
	case pb.Compare_EQUAL:
		return r == 0
	case pb.Compare_NOT_EQUAL:
		return r != 0
	case pb.Compare_GREATER:
		return r > 0
	case pb.Compare_LESS:
		return r < 0
	}
	return false
}

func txnHasPuts(r *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			if op.GetRequestPut() != nil {
				return true
			}
			if t := op.GetRequestTxn(); t != nil && txnHasPuts(t) {
				return true
			}
		}
	}
	return false
}

func txnReadOnly(r *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			if op.GetRequestRange() == nil {
				if t := op.GetRequestTxn(); t == nil || !txnReadOnly(t) {
					return false
				}
			}
		}
	}
	return true
}

func txnSerializable(r *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			if rr := op.GetRequestRange(); rr != nil && !rr.Serializable {
				return false
			}
			if t := op.GetRequestTxn(); t != nil && !txnSerializable(t) {
				return false
			}
		}
	}
	return true
}
