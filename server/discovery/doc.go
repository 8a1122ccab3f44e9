// Package discovery is the v3 discovery protocol: the keys a token occupies in the etcd cluster
// that serves discovery, and the steps a new member takes to register there and learn its peers.
// The key layout is upstream etcd 3.6's, so upstream members can bootstrap through our discovery
// service and ours through an upstream etcd cluster.
//
// The files:
//
//	registry.go the keys a token occupies in the discovery cluster
//	join.go     Joiner: a member registered under a token, waiting for the rest
//	client.go   Bootstrap: --discovery-endpoints, the new member's initial cluster learned
//	v2.go       v2 discovery (--discovery=<url>, levels 3.5 and 3.6)
package discovery
