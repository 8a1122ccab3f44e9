package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrProxyUnreachable says an upstream release could not be fetched because the Go module
// proxy did not answer.
var ErrProxyUnreachable = errors.New("the Go module proxy is unreachable")

// UpstreamSubject matches subjects that name an upstream release: upstream-3.5.35.
var UpstreamSubject = regexp.MustCompile(`^upstream-(3\.[0-9]+\.[0-9]+)$`)

// upstreamPackages are the main packages of upstream's binaries.
var upstreamPackages = map[string]string{
	"etcd":    "go.etcd.io/etcd/server/v3",
	"etcdctl": "go.etcd.io/etcd/etcdctl/v3",
	"etcdutl": "go.etcd.io/etcd/etcdutl/v3",
}

// UpstreamDir is where BuildUpstream keeps a release's binaries: the user's cache directory.
func UpstreamDir(version string) string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "etcdx-upstream", version)
}

// BuildUpstream builds upstream etcd, etcdctl and etcdutl at version ("v3.5.35") from the Go
// module proxy, static (CGO_ENABLED=0, so they run in FROM-scratch images), once per machine,
// and returns their directory. Each binary appears there whole or not at all, so concurrent
// builders do not see half-written files.
func BuildUpstream(version string) (string, error) {
	dir := UpstreamDir(version)
	missing := false
	for b := range upstreamPackages {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = true
		}
	}
	if !missing {
		return dir, nil
	}
	mod, err := TempModule(dir, "upstreambuild")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(mod)
	run := func(args ...string) (string, error) { return GoIn(mod, args...) }
	get := []string{"get"}
	for _, p := range upstreamPackages {
		get = append(get, p+"@"+version)
	}
	if out, err := run(get...); err != nil {
		if strings.Contains(out, "dial tcp") || strings.Contains(out, "no such host") || strings.Contains(out, "i/o timeout") {
			return "", fmt.Errorf("upstream etcd %s: %w (%v)", version, ErrProxyUnreachable, err)
		}
		return "", fmt.Errorf("go get upstream etcd %s: %v\n%s", version, err, out)
	}
	for b, pkg := range upstreamPackages {
		tmp := filepath.Join(mod, b)
		if out, err := run("build", "-trimpath", "-o", tmp, pkg); err != nil {
			return "", fmt.Errorf("build upstream %s %s: %v\n%s", b, version, err, out)
		}
		if err := os.Rename(tmp, filepath.Join(dir, b)); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// TempModule makes a throwaway Go module named name in a new directory under dir (created if
// needed), for building upstream's code with GoIn; the caller removes it.
func TempModule(dir, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	mod, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module "+name+"\n\ngo 1.24\n"), 0o644); err != nil {
		os.RemoveAll(mod)
		return "", err
	}
	return mod, nil
}

// GoIn runs the go command in a throwaway module of upstream's (outside this workspace, static
// builds, go.mod updated as needed) and returns its combined output.
func GoIn(mod string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
