package apply

import (
	"errors"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/backend"
	"etcdx/server/mvcc"
)

// Store is the key-value store a request's changes go to: a write transaction or a compaction
// inside the caller's batch. *mvcc.Store is one.
type Store interface {
	WriteIn(b *backend.BatchTx) *mvcc.TxnWrite
	CompactIn(b *backend.BatchTx, rev int64) (<-chan struct{}, error)
	Rev() int64
}

// Result is what applying one request gave.
type Result struct {
	// Resp is the request's answer (*pb.PutResponse, *pb.TxnResponse, ...), nil when Err is set.
	Resp any
	// Err refuses the request; nothing of it changed. errors.Is(Err, ErrHalfApplied) is the
	// exception: a storage failure in a txn's middle, its batch already failed.
	Err error
	// Changes is how many key changes it made (a revoke's deleted keys, a txn's puts and deletes).
	Changes int
	// Compacted closes when a compaction's clean-up of the backend is done.
	Compacted <-chan struct{}
}

// Apply is where a member's apply of a committed request of the kinds this package holds (key
// writes, compaction, leases) goes, the one dispatch the server and the stepped simulation
// share: its changes go into b, the batch the caller records the entry's index in. ok is false
// for any other kind (membership, versions, auth, alarms: the member's own). persistCheckpoints
// says whether a lease checkpoint is kept in the lease records (the cluster version or the
// feature gate decide). The caller has already checked the caller's permissions and the alarms.
func Apply(b *backend.BatchTx, kv Store, les Lessor, r *pb.InternalRaftRequest, persistCheckpoints bool) (res Result, ok bool) {
	switch {
	case r.Put != nil:
		return write(b, kv, func(w *mvcc.TxnWrite) (any, error) { return Put(w, les, r.Put) }), true
	case r.DeleteRange != nil:
		return write(b, kv, func(w *mvcc.TxnWrite) (any, error) { return DeleteRange(w, r.DeleteRange) }), true
	case r.Txn != nil:
		return write(b, kv, func(w *mvcc.TxnWrite) (any, error) { return Txn(w, les, r.Txn) }), true
	case r.Compaction != nil:
		// No write transaction: scheduling a compaction takes the store's locks itself.
		done, err := kv.CompactIn(b, r.Compaction.Revision)
		if err != nil {
			return Result{Err: err}, true
		}
		return Result{Resp: &pb.CompactionResponse{Header: &pb.ResponseHeader{Revision: kv.Rev()}}, Compacted: done}, true
	case r.LeaseGrant != nil:
		resp, err := LeaseGrant(b, les, r.LeaseGrant, kv.Rev())
		return answer(resp, err), true
	case r.LeaseRevoke != nil:
		// Read before the write transaction opens: it holds the store.
		keys, err := les.Keys(r.LeaseRevoke.ID)
		if err != nil {
			return Result{Err: err}, true
		}
		return write(b, kv, func(w *mvcc.TxnWrite) (any, error) { return LeaseRevoke(b, w, les, r.LeaseRevoke, keys) }), true
	case r.LeaseCheckpoint != nil:
		var persist *backend.BatchTx
		if persistCheckpoints {
			persist = b
		}
		resp, err := LeaseCheckpoint(persist, les, r.LeaseCheckpoint, kv.Rev())
		return answer(resp, err), true
	}
	return Result{}, false
}

// write runs one request's changes in a write transaction of b. A half-applied txn aborts it:
// its batch is failed, so nothing of it reaches the file.
func write(b *backend.BatchTx, kv Store, do func(w *mvcc.TxnWrite) (any, error)) Result {
	w := kv.WriteIn(b)
	resp, err := do(w)
	if errors.Is(err, ErrHalfApplied) {
		w.Abort(err)
		return Result{Err: err}
	}
	res := answer(resp, err)
	res.Changes = w.Changes()
	if eerr := w.End(); eerr != nil && res.Err == nil {
		res = Result{Err: fmt.Errorf("end write transaction: %w", eerr)}
	}
	return res
}

// answer is a Result of a response or an error, never both (with an error, the response is
// at most a typed nil).
func answer(resp any, err error) Result {
	if err != nil {
		return Result{Err: err}
	}
	return Result{Resp: resp}
}
