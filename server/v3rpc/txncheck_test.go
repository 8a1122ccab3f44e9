package v3rpc

import (
	"errors"
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func put(k string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k)}}}
}

func del(k, end string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(k), RangeEnd: []byte(end)}}}
}

func get(k string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(k)}}}
}

func nested(then, otherwise []*pb.RequestOp) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: then, Failure: otherwise}}}
}

func ops(o ...*pb.RequestOp) []*pb.RequestOp { return o }

func puts(prefix string, n int) []*pb.RequestOp {
	var out []*pb.RequestOp
	for i := range n {
		out = append(out, put(fmt.Sprint(prefix, i)))
	}
	return out
}

// TestCheckTxnAsUpstream: the static rules of a transaction accept and refuse what upstream
// 3.7.3's kvServer does (e2e's TestTxnAllOrNothingAsUpstream sends the same shapes to both).
func TestCheckTxnAsUpstream(t *testing.T) {
	for _, c := range []struct {
		name    string
		success []*pb.RequestOp
		failure []*pb.RequestOp
		want    error
	}{
		{"distinct puts", ops(put("a"), put("b")), nil, nil},
		{"a key put twice", ops(put("a"), put("a")), nil, rpctypes.ErrGRPCDuplicateKey},
		{"the same key in the two top branches", ops(put("a")), ops(put("a")), nil},
		{"a put inside a delete's range", ops(del("a", "c"), put("b")), nil, rpctypes.ErrGRPCDuplicateKey},
		{"a put at a delete's end", ops(del("a", "c"), put("c")), nil, nil},
		{"a put of a deleted key", ops(del("a", ""), put("a")), nil, rpctypes.ErrGRPCDuplicateKey},
		{"a put beside a delete from the key on", ops(del("a", "\x00"), put("b")), nil, nil},
		{"a nested txn's two branches put one key", ops(nested(ops(put("a")), ops(put("a")))), nil, nil},
		{"a put and a nested put of one key", ops(put("a"), nested(ops(put("a")), nil)), nil, rpctypes.ErrGRPCDuplicateKey},
		{"a put and a nested else-put of one key", ops(put("a"), nested(nil, ops(put("a")))), nil, rpctypes.ErrGRPCDuplicateKey},
		{"two nested txns put one key", ops(nested(ops(put("a")), nil), nested(nil, ops(put("a")))), nil, rpctypes.ErrGRPCDuplicateKey},
		{"a nested put inside a delete of the branch", ops(del("a", "c"), nested(ops(put("b")), nil)), nil, rpctypes.ErrGRPCDuplicateKey},
		{"a nested delete, then a later nested put inside it", ops(nested(ops(del("a", "c")), nil), nested(ops(put("b")), nil)), nil, rpctypes.ErrGRPCDuplicateKey},
		{"a nested put, then a later nested delete over it", ops(nested(ops(put("b")), nil), nested(ops(del("a", "c")), nil)), nil, nil},
		{"a nested delete over a put of the branch", ops(put("b"), nested(ops(del("a", "c")), nil)), nil, rpctypes.ErrGRPCDuplicateKey},
		{"a key put twice two levels down", ops(nested(ops(nested(ops(put("a"), put("a")), nil)), nil)), nil, rpctypes.ErrGRPCDuplicateKey},
		{"an empty op", ops(put("a"), &pb.RequestOp{}), nil, rpctypes.ErrGRPCKeyNotFound},
		{"an empty key in a nested range", ops(nested(ops(get("")), nil)), nil, rpctypes.ErrGRPCEmptyKey},
		{"128 ops", puts("k", 128), nil, nil},
		{"129 ops", puts("k", 129), nil, rpctypes.ErrGRPCTooManyOps},
		{"100 ops and a nested txn of 28", append(puts("k", 99), nested(puts("n", 28), nil)), nil, nil},
		{"100 ops and a nested txn of 29", append(puts("k", 99), nested(puts("n", 29), nil)), nil, rpctypes.ErrGRPCTooManyOps},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkTxn(&pb.TxnRequest{Success: c.success, Failure: c.failure}, 128)
			if !errors.Is(err, c.want) {
				t.Fatalf("checkTxn: %v, want %v", err, c.want)
			}
		})
	}
}
