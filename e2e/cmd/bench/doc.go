// Command bench measures our etcd and upstream etcd side by side, in the same run on the same
// machine, with the same flags and workloads (bounded in count and time), and writes a Markdown
// report. `make bench` runs it.
//
// The files:
//
//	main.go     the parts, the order of rounds (ours and upstream back to back), the subjects
//	load.go     members started for a measurement, clients, CPU readings, one workload run
//	single.go   one member's workloads, run as side-by-side pairs
//	onecpu.go   one member's writes on members limited to one CPU
//	cluster.go  three members' workloads, the rolling restart and the catch-up (availability)
//	scale.go    memory per key, watch delivery to many watchers
//	offered.go  CPU per request, latency and system calls at a fixed open-loop rate (one member and
//	            three)
//	kube.go     the largest Kubernetes cluster three members carry within its SLOs (N stepped up)
//	defrag.go   the online defrag under load and the offline one
//	bigread.go  memory while serving 1 GiB
//	startup.go  start-up on a big data dir
//	cleanup.go  child processes and temp dirs left by a run
//	report.go   the Markdown report, hand-written sections kept, medians and ratios
package main
