package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// UpstreamVersion is the upstream etcd release the interchange tests compare against;
// Upstream35Version is the 3.5 release the mixed-implementation upgrade tests start from.
const (
	UpstreamVersion   = "v3.6.16"
	Upstream35Version = "v3.5.17"
)

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

// UpstreamBinary returns the path of upstream etcd, etcdctl or etcdutl at UpstreamVersion.
func UpstreamBinary(t testing.TB, name string) string {
	t.Helper()
	return UpstreamBinaryAt(t, UpstreamVersion, name)
}

// UpstreamBinaryAt returns the path of upstream etcd, etcdctl or etcdutl at version ("v3.5.17"),
// built once per machine from the Go module proxy. When the proxy cannot be reached the test is
// skipped with a message saying so; any other failure fails the test.
func UpstreamBinaryAt(t testing.TB, version, name string) string {
	t.Helper()
	b := upstreamAt(version)
	if b.unreachable != "" {
		t.Skip(b.unreachable)
	}
	if b.err != nil {
		t.Fatal(b.err)
	}
	return filepath.Join(b.dir, name)
}

// BuildUpstream builds upstream etcd, etcdctl and etcdutl at UpstreamVersion (cached under the
// user cache dir) and returns their directory. unreachable is set, with err nil, when the proxy
// cannot be reached.
func BuildUpstream() (dir, unreachable string, err error) {
	b := upstreamAt(UpstreamVersion)
	return b.dir, b.unreachable, b.err
}

func buildUpstream(version string) (dir, unreachable string, err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir = filepath.Join(cache, "etcdx-e2e", "upstream-"+version)
	bins := []string{"etcd", "etcdctl", "etcdutl"}
	have := true
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			have = false
		}
	}
	if have {
		return dir, "", nil
	}
	mod := filepath.Join(dir, "mod")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return dir, "", err
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module upstreambuild\n\ngo 1.24\n"), 0o644)
	pkgs := map[string]string{
		"etcd":    "go.etcd.io/etcd/server/v3",
		"etcdctl": "go.etcd.io/etcd/etcdctl/v3",
		"etcdutl": "go.etcd.io/etcd/etcdutl/v3",
	}
	get := []string{"get"}
	for _, p := range pkgs {
		get = append(get, p+"@"+version)
	}
	if out, err := run(get...); err != nil {
		if strings.Contains(out, "dial tcp") || strings.Contains(out, "no such host") || strings.Contains(out, "i/o timeout") {
			return dir, fmt.Sprintf("upstream etcd %s cannot be fetched: the Go module proxy is unreachable (%v)", version, err), nil
		}
		return dir, "", fmt.Errorf("go get upstream etcd %s: %v\n%s", version, err, out)
	}
	for _, b := range bins {
		if out, err := run("build", "-o", filepath.Join(dir, b), pkgs[b]); err != nil {
			return dir, "", fmt.Errorf("build upstream %s %s: %v\n%s", b, version, err, out)
		}
	}
	return dir, "", nil
}
