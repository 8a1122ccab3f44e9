package httpapi

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// FuzzGatewayBody: any request body is decoded by the gateway into each request type, or
// refused with an error, never a panic.
func FuzzGatewayBody(f *testing.F) {
	f.Add([]byte(`{"key":"YQ==","range_end":"Yg==","limit":"10","sort_order":"DESCEND"}`))
	f.Add([]byte(`{"compare":[{"key":"YQ==","target":"VALUE","result":"EQUAL","value":"MQ=="}],"success":[{"request_put":{"key":"YQ==","value":"Mg=="}}],"failure":[{"request_txn":{"success":[{"request_range":{"key":"YQ=="}}]}}]}`))
	f.Add([]byte(`{"key":`))
	m := gatewayJSON()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, req := range []any{&pb.RangeRequest{}, &pb.PutRequest{}, &pb.DeleteRangeRequest{}, &pb.TxnRequest{},
			&pb.LeaseGrantRequest{}, &pb.WatchRequest{}, &pb.AuthenticateRequest{}, &pb.MemberAddRequest{}} {
			m.Unmarshal(body, req)
		}
	})
}
