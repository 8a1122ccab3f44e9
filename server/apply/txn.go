package apply

import (
	"bytes"
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
// not a refusal (ErrHalfApplied).

// Txn runs a transaction that may write in w: decided and checked first, then applied. An error
// wrapping ErrHalfApplied means w holds part of it and must not be committed.
func Txn(w Writer, les Leases, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	resp, err := runTxn(w, w, les, r)
	if err != nil && w.Changes() > 0 {
		return nil, fmt.Errorf("%w: %w", ErrHalfApplied, err)
	}
	return resp, err
}

// ReadOnlyTxn runs a transaction of ranges only (TxnReadOnly) in a read view.
func ReadOnlyTxn(v Reader, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	return runTxn(v, nil, nil, r)
}

// runTxn decides every branch of r against v, checks every op on them, then runs them (writing
// through w, nil in a read view); the outer header carries the revision v reads at after.
func runTxn(v Reader, w Writer, les Leases, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	path, err := txnPath(v, r, nil)
	if err != nil {
		return nil, err
	}
	if _, err := checkBranch(v, les, r, path); err != nil {
		return nil, err
	}
	run := txnRun{v: v, w: w, les: les, path: path}
	resp, err := run.txn(r)
	if err != nil {
		return nil, err
	}
	resp.Header = &pb.ResponseHeader{Revision: v.Rev()}
	return resp, nil
}

// txnPath appends to path the branch (true: success) of r and of every nested transaction on
// that branch, in the order they run.
func txnPath(v Reader, r *pb.TxnRequest, path []bool) ([]bool, error) {
	ok, err := evalCompares(v, r.Compare)
	if err != nil {
		return nil, err
	}
	path = append(path, ok)
	for _, op := range branch(r, ok) {
		if t := op.GetRequestTxn(); t != nil {
			if path, err = txnPath(v, t, path); err != nil {
				return nil, err
			}
		}
	}
	return path, nil
}

func branch(r *pb.TxnRequest, success bool) []*pb.RequestOp {
	if success {
		return r.Success
	}
	return r.Failure
}

// checkBranch refuses r before anything of it applies: a range at a future or compacted
// revision, a put on an unknown lease, an ignore_value or ignore_lease put on a missing key,
// anywhere on the branches path picks. It returns the part of path after r's.
func checkBranch(v Reader, les Leases, r *pb.TxnRequest, path []bool) ([]bool, error) {
	ops := branch(r, path[0])
	path = path[1:]
	for _, op := range ops {
		var err error
		switch x := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			err = checkRangeRevision(v, x.RequestRange.Revision)
		case *pb.RequestOp_RequestPut:
			err = checkPut(v, les, x.RequestPut)
		case *pb.RequestOp_RequestDeleteRange:
		case *pb.RequestOp_RequestTxn:
			path, err = checkBranch(v, les, x.RequestTxn, path)
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
func checkRangeRevision(v Reader, rev int64) error {
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

// checkPut refuses a put that would fail when applied (les is nil in a read view, which has
// no puts: TxnReadOnly).
func checkPut(v Reader, les Leases, p *pb.PutRequest) error {
	if les == nil {
		return fmt.Errorf("etcdserver: a write in a read-only transaction")
	}
	if p.IgnoreValue || p.IgnoreLease {
		rr, err := v.Range(p.Key, nil, mvcc.RangeOptions{})
		if err != nil {
			return err
		}
		if len(rr.KVs) == 0 {
			return ErrKeyNotFound
		}
	}
	if p.Lease != 0 && !p.IgnoreLease && !les.Exists(p.Lease) {
		return ErrLeaseNotFound
	}
	return nil
}

// txnRun applies the branches a path chose. w is nil in a read view (the branches then hold
// ranges only). Responses get upstream's headers: each op's carries only its revision, a nested
// transaction's none (the caller sets the outer one's).
type txnRun struct {
	v    Reader
	w    Writer
	les  Leases
	path []bool
}

func (t *txnRun) txn(r *pb.TxnRequest) (*pb.TxnResponse, error) {
	ok := t.path[0]
	t.path = t.path[1:]
	ops := branch(r, ok)
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
		rr, err := Range(t.v, x.RequestRange)
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
		pr, err := Put(t.w, t.les, x.RequestPut)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: pr}}, nil
	case *pb.RequestOp_RequestDeleteRange:
		dr, err := DeleteRange(t.w, x.RequestDeleteRange)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: dr}}, nil
	}
	return nil, fmt.Errorf("etcdserver: unknown txn operation")
}

// evalCompares reports whether every compare holds against the view.
func evalCompares(v Reader, cmps []*pb.Compare) (bool, error) {
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
		rr, err := v.Range(c.Key, GteRange(c.RangeEnd), mvcc.RangeOptions{})
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

// TxnHasPuts says r (or a transaction nested in it) holds a put, which the space quota stops.
func TxnHasPuts(r *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			if op.GetRequestPut() != nil {
				return true
			}
			if t := op.GetRequestTxn(); t != nil && TxnHasPuts(t) {
				return true
			}
		}
	}
	return false
}

// TxnReadOnly says r holds ranges only, so it is served as a read, without raft.
func TxnReadOnly(r *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			if op.GetRequestRange() == nil {
				if t := op.GetRequestTxn(); t == nil || !TxnReadOnly(t) {
					return false
				}
			}
		}
	}
	return true
}

// TxnSerializable says every range of r may be served from the member's own state.
func TxnSerializable(r *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			if rr := op.GetRequestRange(); rr != nil && !rr.Serializable {
				return false
			}
			if t := op.GetRequestTxn(); t != nil && !TxnSerializable(t) {
				return false
			}
		}
	}
	return true
}
