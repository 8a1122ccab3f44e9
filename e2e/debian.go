package e2e

import (
	"sync"
	"testing"

	"etcdx/upgradelab/cluster"
)

// Debian34Version is the etcd Debian 12 ships (package etcd-server): the 3.4 a distribution's
// cluster starts from.
const Debian34Version = "3.4.23"

var debian34 struct {
	once sync.Once
	path string
	err  error
}

// Debian34Binary is Debian's etcd-server 3.4.23, taken from the package once per machine
// (cluster.FetchDebian, the lab's debian-3.4.23 subject). A machine without apt or the
// package skips the test saying so (a failure under E2E_NO_SKIP=1).
func Debian34Binary(t testing.TB) string {
	t.Helper()
	debian34.once.Do(func() { debian34.path, debian34.err = cluster.FetchDebian(Debian34Version) })
	if debian34.err != nil {
		cannotRun(t, "Debian's etcd-server %s: %v", Debian34Version, debian34.err)
	}
	return debian34.path
}
