package v3rpc

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestRequestStatsSizes(t *testing.T) {
	cases := []struct {
		name string
		msg  any
		want int
	}{
		{"nil", nil, -1},
		{"typed nil response of a failed call", (*pb.PutResponse)(nil), -1},
		{"not a message", "x", -1},
		{"empty message", &pb.PutResponse{}, 0},
		{"message", &pb.PutRequest{Key: []byte("k")}, 3},
	}
	for _, c := range cases {
		if got := size(c.msg); got != c.want {
			t.Errorf("%s: size = %d, want %d", c.name, got, c.want)
		}
	}
	if got := loggable(&pb.PutRequest{Key: []byte("k"), Value: []byte("secret")}); got != `key:"k" value_size:6 lease:0` {
		t.Errorf("put request logged as %q", got)
	}
	if got := loggable((*pb.RangeRequest)(nil)); got != "" {
		t.Errorf("nil request logged as %q", got)
	}
}
