// Package v3rpc serves the etcd v3 gRPC API (KV, Watch, Lease, Maintenance, Cluster, Auth) on
// top of a member, with upstream's status codes and messages. Each service is written against
// the small interface of the member it uses (member.go); *etcdserver.Server is all of them.
//
// The files:
//
//	server.go      NewServer: the gRPC server's options and services; the interceptors that
//	               count client requests and check learners, leaders and callers
//	member.go      what each service asks of the member (KV, Watches, Leases, Maintenance,
//	               Cluster, Auth) and what the interceptors ask (Gate, Callers)
//	kv.go          the KV service: requests checked as upstream, response headers
//	kvservice.go   the KV service described per level (RangeStream from 3.7)
//	txncheck.go    a transaction's static rules, checked before it is proposed
//	watch.go       the Watch service: a stream's watchers, progress, fragmenting
//	lease.go       the Lease service, keep-alive streams
//	maintenance.go the Maintenance and Cluster services
//	auth.go        the Auth service; the credentials each request carries and which methods
//	               need a user or root
//	leader.go      upstream's require-leader handling of streams
//	health.go      the gRPC health service (NOT_SERVING during a defragmentation when asked)
//	stats.go       upstream's "request stats" log line, the client's API version
//	metrics.go     the client traffic counters under upstream's metric names
//	callmetrics.go the gRPC call counters (grpc_server_*) in the families upstream registers
//	codec.go       the wire codec: the API's messages through their generated methods,
//	               rangewire's answers as they are
//	errors.go      the member's errors as upstream's gRPC status codes and messages
package v3rpc
