package rangestream

import (
	"bytes"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

func TestResponseWireFormat(t *testing.T) {
	rr := &pb.RangeResponse{Header: &pb.ResponseHeader{Revision: 7}, Kvs: []*mvccpb.KeyValue{{Key: []byte("a"), Value: []byte("1")}}, More: true, Count: 3}
	inner, err := rr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    Response
		want []byte
	}{
		{"nil range_response is an empty message", Response{}, nil},
		{"empty range_response is field 1 of length 0", Response{RangeResponse: &pb.RangeResponse{}}, []byte{0x0a, 0x00}},
		{"field 1, length-delimited", Response{RangeResponse: rr}, append([]byte{0x0a, byte(len(inner))}, inner...)},
	} {
		got, err := c.m.Marshal()
		if err != nil || !bytes.Equal(got, c.want) || c.m.Size() != len(c.want) {
			t.Errorf("%s: Marshal = %x (size %d), %v; want %x", c.name, got, c.m.Size(), err, c.want)
		}
		var back Response
		if err := back.Unmarshal(got); err != nil {
			t.Fatalf("%s: Unmarshal: %v", c.name, err)
		}
		if (back.RangeResponse == nil) != (c.m.RangeResponse == nil) || back.RangeResponse != nil && back.RangeResponse.String() != c.m.RangeResponse.String() {
			t.Errorf("%s: round trip gave %v, want %v", c.name, back.RangeResponse, c.m.RangeResponse)
		}
	}
}

func TestUnmarshalSkipsUnknownAndRefusesTruncated(t *testing.T) {
	// Field 2 (varint 5) before field 1: skipped.
	b := []byte{0x10, 0x05, 0x0a, 0x02, 0x20, 0x04} // range_response{count: 4}
	var m Response
	if err := m.Unmarshal(b); err != nil || m.RangeResponse == nil || m.RangeResponse.Count != 4 {
		t.Fatalf("Unmarshal(%x) = %v, %v", b, m.RangeResponse, err)
	}
	for _, bad := range [][]byte{{0x0a}, {0x0a, 0x05, 0x20}, {0x10}, {0x0a, 0x01, 0xff}} {
		var m Response
		if err := m.Unmarshal(bad); err == nil {
			t.Errorf("Unmarshal(%x) accepted a damaged message: %v", bad, m.RangeResponse)
		}
	}
}
