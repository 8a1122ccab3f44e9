package apply

import (
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/backend"
	"etcdx/server/lease"
)

// Lessor is what the lease requests change: the leases, their records written in the caller's
// batch. *lease.Lessor is one.
type Lessor interface {
	Leases
	Grant(b *backend.BatchTx, id, ttl int64) (*lease.Info, error)
	Keys(id int64) ([][]byte, error)
	Forget(id int64, b *backend.BatchTx) error
	Checkpoint(b *backend.BatchTx, id, remaining int64) error
}

// LeaseGrant creates the lease r names with its TTL (raised to the lessor's minimum); rev is the
// store's revision, which a grant does not move.
func LeaseGrant(b *backend.BatchTx, les Lessor, r *pb.LeaseGrantRequest, rev int64) (*pb.LeaseGrantResponse, error) {
	l, err := les.Grant(b, r.ID, r.TTL)
	if err != nil {
		return nil, err
	}
	return &pb.LeaseGrantResponse{Header: &pb.ResponseHeader{Revision: rev}, ID: l.ID, TTL: l.TTL}, nil
}

// LeaseRevoke deletes every key on the lease in w (all at one revision) and forgets the lease.
// The keys are read before w is opened (the caller's order: a write transaction holds the
// store), so they are passed in: LeaseKeys gives them.
func LeaseRevoke(b *backend.BatchTx, w Writer, les Lessor, r *pb.LeaseRevokeRequest, keys [][]byte) (*pb.LeaseRevokeResponse, error) {
	for _, k := range keys {
		if _, err := w.DeleteRange(k, nil); err != nil {
			return nil, err
		}
	}
	if err := les.Forget(r.ID, b); err != nil {
		return nil, err
	}
	return &pb.LeaseRevokeResponse{Header: &pb.ResponseHeader{Revision: w.Rev()}}, nil
}

// LeaseCheckpoint records each remaining TTL r carries on every member; with persist (a batch:
// the cluster version or the feature gate keeps checkpoints), the lease records keep them too.
// A lease that is gone is skipped: its revoke came first.
func LeaseCheckpoint(persist *backend.BatchTx, les Lessor, r *pb.LeaseCheckpointRequest, rev int64) (*pb.LeaseCheckpointResponse, error) {
	for _, cp := range r.Checkpoints {
		if err := les.Checkpoint(persist, cp.ID, cp.Remaining_TTL); err != nil {
			return nil, err
		}
	}
	return &pb.LeaseCheckpointResponse{Header: &pb.ResponseHeader{Revision: rev}}, nil
}

// Checkpoints is the request a leader's checkpoint round proposes for the remaining TTLs it
// found (lease ID -> seconds), in lease order so every proposer encodes the same round alike.
func Checkpoints(remaining map[int64]int64) *pb.LeaseCheckpointRequest {
	req := &pb.LeaseCheckpointRequest{Checkpoints: make([]*pb.LeaseCheckpoint, 0, len(remaining))}
	for id, ttl := range remaining {
		req.Checkpoints = append(req.Checkpoints, &pb.LeaseCheckpoint{ID: id, Remaining_TTL: ttl})
	}
	sort.Slice(req.Checkpoints, func(i, j int) bool { return req.Checkpoints[i].ID < req.Checkpoints[j].ID })
	return req
}
