// Package reqrecord is a gRPC proxy in front of one etcd member that forwards every request
// and answer unchanged, byte for byte, and records the shape of each (method, key, sizes, the
// options that decide its cost): what a client such as kube-apiserver really sends to etcd.
//
// The files:
//
//	proxy.go     Proxy: forwards every message unchanged and records each call
//	describe.go  a request's and an answer's shape: method, key, sizes, the options that decide its
//	             cost
//	summary.go   Summarize: calls grouped by kind per window, with size distributions
package reqrecord
