// Package e2e holds end-to-end tests that build and run the real binaries and talk to them through
// go.etcd.io/etcd/client/v3 and plain HTTP, exactly as users do.
//
// Most tests run one at a time. A few that mostly wait (for peers to settle, for checkpoint
// rounds, for members of other releases to start) and judge nothing by time call t.Parallel:
// Go runs them together once the others are done, at most -parallel at once (make e2e: 4), so
// their waits overlap. A test that measures time (stalls, latencies, availability) stays serial.
package e2e
