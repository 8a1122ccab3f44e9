// Package e2e holds end-to-end tests that build and run the real binaries and talk to them through
// go.etcd.io/etcd/client/v3 and plain HTTP, exactly as users do.
//
// Most tests run one at a time. A few that mostly wait (for peers to settle, for checkpoint
// rounds, for members of other releases to start) and judge nothing by time call t.Parallel:
// Go runs them together once the others are done, at most -parallel at once (make e2e: 4), so
// their waits overlap. A test that measures time (stalls, latencies, availability) stays serial.
//
// The files: the harness the tests share (the tests are in files named by their subject).
//
//	member.go        Binary, FreePort, Member and Cluster: our members on the shared harness
//	                 (upgradelab/cluster)
//	versions.go      the levels make build produces and the release each reports
//	upstream.go      upstream's current patch of each line and its binaries, built from the proxy
//	debian.go        Debian's etcd-server 3.4, taken from its package
//	ctlproc.go       a long-running etcdctl (watch, lock, elect) and its output
//	discoverysvc.go  a discovery service process with its own member
//	certs.go         a test PKI: CA, server, peer and client certificates
//	skips.go         what a test needs that a developer's machine may lack, and the skip
package e2e
