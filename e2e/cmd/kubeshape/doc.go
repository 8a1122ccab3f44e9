// Command kubeshape records what a real kube-apiserver sends to etcd: it starts an etcd member,
// a recording proxy in front of it (e2e/reqrecord), kube-apiserver (built from the Go module
// proxy) against the proxy, and a fleet of simulated kubelets, scheduler and controller driving
// kube-apiserver (e2e/kubeapi); then it writes every kind of request per phase, with its rate
// per node, its sizes and its options, as Markdown and JSON. The bench's Kubernetes-shaped
// workload takes its defaults from that record. `make kube-shape` runs it.
//
// The files:
//
//	main.go    the flags, the member, proxy, kube-apiserver and fleet of a recording, its phases
//	report.go  the record as Markdown (docs/kube-shape.md)
package main
