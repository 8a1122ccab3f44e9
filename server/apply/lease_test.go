package apply_test

import (
	"errors"
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/apply"
	"etcdx/server/lease"
)

func (st *state) grant(r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	b := st.be.Batch()
	resp, err := apply.LeaseGrant(b, st.les, r, st.kv.Rev())
	if uerr := b.Unlock(); uerr != nil {
		st.t.Fatal(uerr)
	}
	return resp, err
}

// revoke applies a revoke as the apply loop does: the lease's keys read first, then deleted in
// one write transaction sharing the batch the lease record goes from.
func (st *state) revoke(id int64) (*pb.LeaseRevokeResponse, error) {
	keys, err := st.les.Keys(id)
	if err != nil {
		return nil, err
	}
	b := st.be.Batch()
	w := st.kv.WriteIn(b)
	resp, err := apply.LeaseRevoke(b, w, st.les, &pb.LeaseRevokeRequest{ID: id}, keys)
	if eerr := w.End(); eerr != nil {
		st.t.Fatal(eerr)
	}
	if uerr := b.Unlock(); uerr != nil {
		st.t.Fatal(uerr)
	}
	return resp, err
}

// The fixture holds lease 100 (TTL 60) with b on it; the lessor's minimum TTL is 1.
func TestLeaseGrantSemantics(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *pb.LeaseGrantRequest
		want string // ID/TTL at the header's revision, or the error
	}{
		{"a new lease", &pb.LeaseGrantRequest{ID: 7, TTL: 30}, "7/30 at 5"},
		{"a TTL below the minimum is raised to it", &pb.LeaseGrantRequest{ID: 7, TTL: 0}, "7/1 at 5"},
		{"the largest TTL", &pb.LeaseGrantRequest{ID: 7, TTL: lease.MaxTTL}, fmt.Sprintf("7/%d at 5", lease.MaxTTL)},
		{"a TTL above the largest", &pb.LeaseGrantRequest{ID: 7, TTL: lease.MaxTTL + 1}, "error: " + lease.ErrTTLTooLarge.Error()},
		{"an ID that exists", &pb.LeaseGrantRequest{ID: 100, TTL: 30}, "error: " + lease.ErrExists.Error()},
		{"ID 0 (the proposer picks one first)", &pb.LeaseGrantRequest{ID: 0, TTL: 30}, "error: " + lease.ErrNotFound.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newState(t)
			resp, err := st.grant(tc.req)
			got := ""
			if err != nil {
				got = "error: " + err.Error()
			} else {
				got = fmt.Sprintf("%d/%d at %d", resp.ID, resp.TTL, resp.Header.Revision)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if st.kv.Rev() != 5 {
				t.Fatalf("a grant moved the revision to %d", st.kv.Rev())
			}
		})
	}
}

func TestLeaseRevokeDeletesItsKeysAtOneRevision(t *testing.T) {
	st := newState(t)
	if _, err := st.grant(&pb.LeaseGrantRequest{ID: 8, TTL: 30}); err != nil {
		t.Fatal(err)
	}
	st.mustPut("d", "6", 100) // rev 6: lease 100 holds b and d
	st.mustPut("e", "7", 8)   // rev 7
	resp, err := st.revoke(100)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision != 8 {
		t.Fatalf("revoke answered revision %d, want 8 (b and d deleted together)", resp.Header.Revision)
	}
	got, err := st.rangeAt(&pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("z")})
	if want := "rev=8 count=3 a=3@2/4/2 c=5@5/5/1 e=7@7/7/1+8"; rangeResult(got, err) != want {
		t.Fatalf("after the revoke: %s, want %s", rangeResult(got, err), want)
	}
	if st.les.Exists(100) || !st.les.Exists(8) {
		t.Fatal("the revoke forgot the wrong lease")
	}
	if _, err := st.revoke(100); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("revoking it again: %v, want %v", err, lease.ErrNotFound)
	}
	// A revoke of a lease with no keys left moves no revision.
	if _, err := st.deleteRange(&pb.DeleteRangeRequest{Key: []byte("e")}); err != nil { // rev 9
		t.Fatal(err)
	}
	resp, err = st.revoke(8)
	if err != nil || resp.Header.Revision != 9 {
		t.Fatalf("revoke of an empty lease: %v, revision %d, want 9", err, resp.GetHeader().GetRevision())
	}
}

// A checkpoint is kept in the lease record only when persisted; a reload (a restart) shows it.
func TestLeaseCheckpointPersistsOnlyWhenAsked(t *testing.T) {
	for _, persist := range []bool{false, true} {
		t.Run(fmt.Sprintf("persist=%v", persist), func(t *testing.T) {
			st := newState(t)
			b := st.be.Batch()
			var keep = b
			if !persist {
				keep = nil
			}
			req := apply.Checkpoints(map[int64]int64{100: 20, 555: 3}) // 555 does not exist
			if _, err := apply.LeaseCheckpoint(keep, st.les, req, st.kv.Rev()); err != nil {
				t.Fatal(err)
			}
			if err := b.Unlock(); err != nil {
				t.Fatal(err)
			}
			if err := st.be.Commit(); err != nil {
				t.Fatal(err)
			}
			reloaded, err := lease.New(st.be, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A new leader starts the lease from the checkpoint: its remaining TTL says which.
			reloaded.Promote(0)
			in, err := reloaded.Lookup(100)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(59) // a fresh TTL of 60, a moment gone
			if persist {
				want = 19
			}
			if in.RemainingTTL != want {
				t.Fatalf("after a restart the lease has %d s left, want %d", in.RemainingTTL, want)
			}
		})
	}
}

func TestCheckpointsAreInLeaseOrder(t *testing.T) {
	req := apply.Checkpoints(map[int64]int64{9: 1, 3: 2, 7: 3, 1: 4})
	got := ""
	for _, cp := range req.Checkpoints {
		got += fmt.Sprintf("%d:%d ", cp.ID, cp.Remaining_TTL)
	}
	if want := "1:4 3:2 7:3 9:1 "; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
