package v3rpc

import (
	"bytes"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// The static rules of a transaction, checked before it is proposed. They are upstream's, in
// upstream's order, so a request that breaks several gets the same error from ours: first the
// shape (checkTxnRequest), then keys written twice (txnWritesOf) on each top-level branch.

// checkTxnRequest: at most maxOps compares and at most maxOps ops per branch, where a nested
// transaction may have only what its parent leaves (maxOps less the parent's largest count);
// every compare names a key; every op follows its own request's rules; an op with nothing set
// is refused as upstream refuses it (key not found).
func checkTxnRequest(r *pb.TxnRequest, maxOps int) error {
	n := max(len(r.Compare), len(r.Success), len(r.Failure))
	if n > maxOps {
		return rpctypes.ErrGRPCTooManyOps
	}
	if err := checkCompares(r.Compare); err != nil {
		return err
	}
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			if err := checkRequestOp(op, maxOps-n); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkRequestOp(op *pb.RequestOp, maxOps int) error {
	switch {
	case op.GetRequestRange() != nil:
		return checkRange(op.GetRequestRange())
	case op.GetRequestPut() != nil:
		return checkPut(op.GetRequestPut())
	case op.GetRequestDeleteRange() != nil:
		return checkDelete(op.GetRequestDeleteRange())
	case op.GetRequestTxn() != nil:
		return checkTxnRequest(op.GetRequestTxn(), maxOps)
	}
	return rpctypes.ErrGRPCKeyNotFound
}

// txnWrites is what one branch may write: the keys it puts and the ranges it deletes, nested
// transactions' included (both of their branches, as either may run).
type txnWrites struct {
	puts map[string]struct{}
	dels []*pb.DeleteRangeRequest
}

// deletes says a delete of the branch covers key. A delete's range is [key, range_end) by
// plain byte order, as upstream's interval check takes it: a range_end of "\x00" ("every key
// from key on" to the server) covers nothing here, so upstream lets a put beside such a delete
// through, and so do we.
func (w *txnWrites) deletes(key []byte) bool {
	for _, d := range w.dels {
		if len(d.RangeEnd) == 0 {
			if bytes.Equal(d.Key, key) {
				return true
			}
			continue
		}
		if bytes.Compare(d.Key, key) <= 0 && bytes.Compare(key, d.RangeEnd) < 0 {
			return true
		}
	}
	return false
}

// txnWritesOf collects a branch's writes and refuses it (duplicate key) when it writes a key
// twice: two puts of one key, or a put of a key a delete of the branch covers. Only one branch
// of a nested transaction runs, so its success and failure branches may put the same key. As
// upstream, a nested transaction's puts are checked against the deletes of this branch and of
// the nested transactions before it; its deletes are not checked against puts already seen.
func txnWritesOf(ops []*pb.RequestOp) (txnWrites, error) {
	w := txnWrites{puts: map[string]struct{}{}}
	for _, op := range ops {
		if d := op.GetRequestDeleteRange(); d != nil {
			w.dels = append(w.dels, d)
		}
	}
	for _, op := range ops {
		t := op.GetRequestTxn()
		if t == nil {
			continue
		}
		then, err := txnWritesOf(t.Success)
		if err != nil {
			return w, err
		}
		otherwise, err := txnWritesOf(t.Failure)
		if err != nil {
			return w, err
		}
		for k := range then.puts {
			if _, dup := w.puts[k]; dup || w.deletes([]byte(k)) {
				return w, rpctypes.ErrGRPCDuplicateKey
			}
			w.puts[k] = struct{}{}
		}
		for k := range otherwise.puts {
			_, seen := w.puts[k]
			_, fromThen := then.puts[k]
			if seen && !fromThen || w.deletes([]byte(k)) {
				return w, rpctypes.ErrGRPCDuplicateKey
			}
			w.puts[k] = struct{}{}
		}
		w.dels = append(w.dels, then.dels...)
		w.dels = append(w.dels, otherwise.dels...)
	}
	for _, op := range ops {
		p := op.GetRequestPut()
		if p == nil {
			continue
		}
		if _, dup := w.puts[string(p.Key)]; dup || w.deletes(p.Key) {
			return w, rpctypes.ErrGRPCDuplicateKey
		}
		w.puts[string(p.Key)] = struct{}{}
	}
	return w, nil
}

// checkTxn is every static rule of a transaction.
func checkTxn(r *pb.TxnRequest, maxOps int) error {
	if err := checkTxnRequest(r, maxOps); err != nil {
		return err
	}
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		if _, err := txnWritesOf(ops); err != nil {
			return err
		}
	}
	return nil
}
