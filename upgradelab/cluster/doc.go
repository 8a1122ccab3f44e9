// Package cluster is the one harness that starts etcd clusters as local processes on loopback
// ports, for the lab, the end-to-end tests and the bench: members of any binary that can be
// stopped, killed and started again with another binary, health and version probes, and a
// ledger of acknowledged writes that finds the lost ones.
//
// The files:
//
//	cluster.go         Cluster: members started on loopback ports
//	member.go          Member: start, stop, kill, health and version probes, its client
//	binaries.go        the binaries a run uses and the level each reports
//	debian.go          Debian's etcd-server (3.4) fetched for the oldest line
//	upstream.go        upstream releases built from the Go module proxy
//	ledger.go          Ledger and CheckAcked: acknowledged writes and the lost ones (pkg/judge)
//	hashes.go          Hashes: the members' HashKV at one revision (pkg/judge decides)
//	metrics.go         a member's /metrics read
//	ports.go           free ports, reserved across processes
//	procattr_linux.go  a member dies with its parent (Linux)
//	procattr_other.go  the same elsewhere: nothing
package cluster
