package etcdserver

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestExceedsRequestLimit(t *testing.T) {
	put := &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}}
	revoke := &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 1}}
	for _, c := range []struct {
		name               string
		applied, committed uint64
		r                  *pb.InternalRaftRequest
		priority, want     bool
	}{
		{"caught up", 100, 100, put, false, false},
		{"at the gap", 100, 100 + maxApplyGap, put, false, false},
		{"past the gap", 100, 101 + maxApplyGap, put, false, true},
		{"a revocation past the gap, no priority", 100, 101 + maxApplyGap, revoke, false, true},
		{"a revocation past the gap, priority", 100, 101 + maxApplyGap, revoke, true, false},
		{"a put past the gap, priority", 100, 101 + maxApplyGap, put, true, true},
		{"a revocation at the priority gap", 100, 100 + maxPriorityApplyGap, revoke, true, false},
		{"a revocation past the priority gap", 100, 101 + maxPriorityApplyGap, revoke, true, true},
		{"applied ahead of committed (restart)", 200, 100, put, false, false},
	} {
		if got := exceedsRequestLimit(c.applied, c.committed, c.r, c.priority); got != c.want {
			t.Errorf("%s: exceedsRequestLimit = %v, want %v", c.name, got, c.want)
		}
	}
}
