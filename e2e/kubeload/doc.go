// Package kubeload sends etcd what the kube-apiservers of a Kubernetes cluster of N nodes send
// it, without running Kubernetes: the requests, their shapes, sizes and rates are those
// docs/kube-shape.md recorded from a real kube-apiserver (e2e/cmd/kubeshape), scaled by the
// number of nodes and of API servers. The load is open-loop (each request is sent when its
// schedule says, whatever the ones before it are doing) and its latencies count from that
// moment, so a member that falls behind shows it in the figures instead of slowing the load.
//
// The files:
//
//	shape.go   Shape and Defaults: every parameter, its flag and where its default comes from
//	load.go    Load: Populate and the open-loop Run
//	watch.go   the API servers' watches, progress requests and compactor
//	record.go  the request classes, their figures per window and KubernetesSLO
package kubeload
