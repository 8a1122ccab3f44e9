// Package e2e holds end-to-end tests that build and run the real binaries and talk to them through
// go.etcd.io/etcd/client/v3 and plain HTTP, exactly as users do.
package e2e
