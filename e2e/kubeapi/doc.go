// Package kubeapi runs a real kube-apiserver, built from the Go module proxy, against an etcd
// member, and drives it as a cluster's kubelets, scheduler and controllers would (Fleet): the
// source of what Kubernetes sends to etcd, which the bench's Kubernetes-shaped workload copies.
//
// The files:
//
//	build.go    Build: kube-apiserver from the Go module proxy
//	server.go   Start: kube-apiserver against a member, with its flags and keys
//	fleet.go    Fleet: kubelets, scheduler and controller driving kube-apiserver
//	objects.go  the objects as their owners write them (nodes, leases, pods, bindings)
package kubeapi
