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

// UpstreamVersion is the upstream etcd release the interchange tests compare against.
const UpstreamVersion = "v3.6.16"

var (
	upstreamOnce sync.Once
	upstreamDir  string
	upstreamErr  error
	upstreamSkip string
)

// UpstreamBinary returns the path of upstream etcd, etcdctl or etcdutl at UpstreamVersion, built
// once per machine by BuildUpstream. When the module proxy cannot be reached the test is skipped
// with a message saying so; any other failure fails the test.
func UpstreamBinary(t testing.TB, name string) string {
	t.Helper()
	upstreamOnce.Do(buildUpstream)
	if upstreamSkip != "" {
		t.Skip(upstreamSkip)
	}
	if upstreamErr != nil {
		t.Fatal(upstreamErr)
	}
	return filepath.Join(upstreamDir, name)
}

// BuildUpstream builds upstream etcd, etcdctl and etcdutl from the Go module proxy (cached under
// the user cache dir) and returns their directory. unreachable is set, with err nil, when the
// proxy cannot be reached.
func BuildUpstream() (dir, unreachable string, err error) {
	upstreamOnce.Do(buildUpstream)
	return upstreamDir, upstreamSkip, upstreamErr
}

func buildUpstream() {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "etcdx-e2e", "upstream-"+UpstreamVersion)
	bins := []string{"etcd", "etcdctl", "etcdutl"}
	have := true
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			have = false
		}
	}
	upstreamDir = dir
	if have {
		return
	}
	mod := filepath.Join(dir, "mod")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		upstreamErr = err
		return
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
		get = append(get, p+"@"+UpstreamVersion)
	}
	if out, err := run(get...); err != nil {
		if strings.Contains(out, "dial tcp") || strings.Contains(out, "no such host") || strings.Contains(out, "i/o timeout") {
			upstreamSkip = fmt.Sprintf("upstream etcd %s cannot be fetched: the Go module proxy is unreachable (%v)", UpstreamVersion, err)
			return
		}
		upstreamErr = fmt.Errorf("go get upstream etcd %s: %v\n%s", UpstreamVersion, err, out)
		return
	}
	for _, b := range bins {
		if out, err := run("build", "-o", filepath.Join(dir, b), pkgs[b]); err != nil {
			upstreamErr = fmt.Errorf("build upstream %s %s: %v\n%s", b, UpstreamVersion, err, out)
			return
		}
	}
}
