package apply

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/auth"
)

// Permissions decides what a caller may do; *auth.Store is one.
type Permissions interface {
	Enabled() bool
	IsAdminPermitted(in *auth.Info) error
	IsRangePermitted(in *auth.Info, key, end []byte) error
	IsPutPermitted(in *auth.Info, key []byte) error
	IsDeleteRangePermitted(in *auth.Info, key, end []byte) error
}

// LeaseKeys says which keys hang on a lease; *lease.Lessor is one.
type LeaseKeys interface {
	Keys(id int64) ([][]byte, error)
}

// Permitted is the check every member makes at apply of a key or lease request, with the caller
// its proposer named: nil, or the permission error the request is refused with (before it
// changes anything). A txn is refused if any compare or any op of either branch, nested ones too,
// is not permitted, whichever branch would run, as upstream's.
func Permitted(p Permissions, les LeaseKeys, in *auth.Info, r *pb.InternalRaftRequest) error {
	switch {
	case r.Put != nil:
		return permittedPut(p, les, in, r.Put)
	case r.DeleteRange != nil:
		return permittedDelete(p, in, r.DeleteRange)
	case r.Txn != nil:
		return permittedTxn(p, les, in, r.Txn)
	case r.LeaseRevoke != nil:
		return LeasePermitted(p, les, in, r.LeaseRevoke.ID, true)
	}
	return nil
}

// LeasePermitted: with auth on, a caller other than root may use (write) or read a lease only if
// it may write (or read) every key on it. A lease that does not exist passes: the request fails
// on its own terms.
func LeasePermitted(p Permissions, les LeaseKeys, in *auth.Info, id int64, write bool) error {
	if id == 0 || !p.Enabled() {
		return nil
	}
	keys, err := les.Keys(id)
	if err != nil {
		return nil
	}
	if p.IsAdminPermitted(in) == nil {
		return nil
	}
	for _, k := range keys {
		if write {
			err = p.IsPutPermitted(in, k)
		} else {
			err = p.IsRangePermitted(in, k, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// permittedPut: the key written, every key of the lease it goes on, and the key read back with
// prev_kv.
func permittedPut(p Permissions, les LeaseKeys, in *auth.Info, r *pb.PutRequest) error {
	if err := p.IsPutPermitted(in, r.Key); err != nil {
		return err
	}
	if err := LeasePermitted(p, les, in, r.Lease, true); err != nil {
		return err
	}
	if r.PrevKv {
		return p.IsRangePermitted(in, r.Key, nil)
	}
	return nil
}

// permittedDelete: the range deleted, and read back with prev_kv.
func permittedDelete(p Permissions, in *auth.Info, r *pb.DeleteRangeRequest) error {
	if err := p.IsDeleteRangePermitted(in, r.Key, r.RangeEnd); err != nil {
		return err
	}
	if r.PrevKv {
		return p.IsRangePermitted(in, r.Key, r.RangeEnd)
	}
	return nil
}

func permittedTxn(p Permissions, les LeaseKeys, in *auth.Info, r *pb.TxnRequest) error {
	for _, c := range r.Compare {
		if err := p.IsRangePermitted(in, c.Key, c.RangeEnd); err != nil {
			return err
		}
	}
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			var err error
			switch {
			case op.GetRequestRange() != nil:
				rr := op.GetRequestRange()
				err = p.IsRangePermitted(in, rr.Key, rr.RangeEnd)
			case op.GetRequestPut() != nil:
				err = permittedPut(p, les, in, op.GetRequestPut())
			case op.GetRequestDeleteRange() != nil:
				err = permittedDelete(p, in, op.GetRequestDeleteRange())
			case op.GetRequestTxn() != nil:
				err = permittedTxn(p, les, in, op.GetRequestTxn())
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
