package e2e

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"etcdx/upgradelab/cluster"
)

// Upstream's current patch release of each line, the references of the differential tests.
const (
	Upstream35Version = "v3.5.35"
	Upstream36Version = "v3.6.16"
	Upstream37Version = "v3.7.3"
	// CurrentUpstream is the release bin/etcd's level implements: what UpstreamBinary and the
	// bench compare our default build against.
	CurrentUpstream = Upstream37Version
)

// UpstreamOfLine is the current patch release of a minor line ("3.6" -> "v3.6.16"), or "" for a
// line this workspace does not compare against.
func UpstreamOfLine(line string) string {
	return map[string]string{"3.5": Upstream35Version, "3.6": Upstream36Version, "3.7": Upstream37Version}[line]
}

// upstreamBuild is one release's binaries, built once per test process (and cached per machine).
type upstreamBuild struct {
	once        sync.Once
	dir         string
	err         error
	unreachable string
}

var (
	upstreamMu     sync.Mutex
	upstreamBuilds = map[string]*upstreamBuild{}
)

func upstreamAt(version string) *upstreamBuild {
	upstreamMu.Lock()
	b, ok := upstreamBuilds[version]
	if !ok {
		b = &upstreamBuild{}
		upstreamBuilds[version] = b
	}
	upstreamMu.Unlock()
	b.once.Do(func() { b.dir, b.unreachable, b.err = buildUpstream(version) })
	return b
}

// UpstreamBinary returns the path of upstream etcd, etcdctl or etcdutl at CurrentUpstream.
func UpstreamBinary(t testing.TB, name string) string {
	t.Helper()
	return UpstreamBinaryAt(t, CurrentUpstream, name)
}

// UpstreamBinaryAt returns the path of upstream etcd, etcdctl or etcdutl at version ("v3.5.35"),
// built once per machine from the Go module proxy. When the proxy cannot be reached the test is
// skipped with a message saying so (a failure under E2E_NO_SKIP=1); any other failure fails the test.
func UpstreamBinaryAt(t testing.TB, version, name string) string {
	t.Helper()
	b := upstreamAt(version)
	if b.unreachable != "" {
		cannotRun(t, "%s", b.unreachable)
	}
	if b.err != nil {
		t.Fatal(b.err)
	}
	return filepath.Join(b.dir, name)
}

// BuildUpstream builds upstream etcd, etcdctl and etcdutl at version ("v3.6.16"; cached under
// the user cache dir, by cluster.BuildUpstream) and returns their directory. unreachable is set,
// with err nil, when the proxy cannot be reached.
func BuildUpstream(version string) (dir, unreachable string, err error) {
	b := upstreamAt(version)
	return b.dir, b.unreachable, b.err
}

func buildUpstream(version string) (dir, unreachable string, err error) {
	dir, err = cluster.BuildUpstream(version)
	if errors.Is(err, cluster.ErrProxyUnreachable) {
		return dir, fmt.Sprintf("upstream etcd %s cannot be fetched: %v", version, err), nil
	}
	return dir, "", err
}

// besideUpstream runs session on a fresh member of upstream's current release and on a fresh one
// of ours, and reports every answer that differs (upstream's first).
func besideUpstream(t *testing.T, session func(*testing.T, *Member) []string) {
	t.Helper()
	besideUpstreamAs(t, func() *Member { return NewMember(t) }, session)
}

// besideUpstreamAs is besideUpstream on members newMember prepares (with TLS, say).
func besideUpstreamAs(t *testing.T, newMember func() *Member, session func(*testing.T, *Member) []string) {
	t.Helper()
	up := newMember()
	up.Bin = UpstreamBinary(t, "etcd")
	ours := newMember()
	up.Start()
	ours.Start()
	u, o := session(t, up), session(t, ours)
	for i := range max(len(u), len(o)) {
		var us, os string
		if i < len(u) {
			us = u[i]
		}
		if i < len(o) {
			os = o[i]
		}
		if us != os {
			t.Errorf("answer %d:\n ours     %s\n upstream %s", i, os, us)
		}
	}
}
