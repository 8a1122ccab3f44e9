package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"etcdx/upgradelab/cluster"
)

// TestsModule is upstream's module of test suites.
const TestsModule = "go.etcd.io/etcd/tests/v3"

// Suite is upstream's test binary of one package at one release, and the directory its tests
// run in (the package's own, in the module cache: they find their fixtures beside it).
type Suite struct {
	Version string // "v3.7.3"
	Package string // "e2e", "robustness"
	Binary  string
	Dir     string
}

// BuildSuite builds upstream's test binary of pkg (a package of TestsModule: "e2e") at version
// from the Go module proxy, once per machine, beside that release's binaries
// (cluster.UpstreamDir). The module it builds in stays there, so the package's directory does.
func BuildSuite(version, pkg string) (*Suite, error) {
	base := filepath.Join(cluster.UpstreamDir(version), "suites")
	mod := filepath.Join(base, "mod")
	s := &Suite{Version: version, Package: pkg, Binary: filepath.Join(base, strings.ReplaceAll(pkg, "/", "-")+".test")}
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return nil, err
	}
	run := func(args ...string) (string, error) { return cluster.GoIn(mod, args...) }
	if _, err := os.Stat(filepath.Join(mod, "go.mod")); err != nil {
		if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module upstreamsuites\n\ngo 1.24\n"), 0o644); err != nil {
			return nil, err
		}
		if out, err := run("get", TestsModule+"@"+version); err != nil {
			if strings.Contains(out, "dial tcp") || strings.Contains(out, "no such host") {
				return nil, fmt.Errorf("upstream tests %s: %w (%v)", version, cluster.ErrProxyUnreachable, err)
			}
			os.Remove(filepath.Join(mod, "go.mod")) // so the next try fetches again
			return nil, fmt.Errorf("go get %s@%s: %v\n%s", TestsModule, version, err, out)
		}
	}
	out, err := run("list", "-m", "-f", "{{.Dir}}", TestsModule)
	if err != nil {
		return nil, fmt.Errorf("find %s@%s: %v\n%s", TestsModule, version, err, out)
	}
	s.Dir = filepath.Join(strings.TrimSpace(out), filepath.FromSlash(pkg))
	if _, err := os.Stat(s.Binary); err == nil {
		return s, nil
	}
	tmp := s.Binary + ".tmp"
	if out, err := run("test", "-c", "-o", tmp, TestsModule+"/"+pkg); err != nil {
		return nil, fmt.Errorf("build upstream's %s tests at %s: %v\n%s", pkg, version, err, out)
	}
	return s, os.Rename(tmp, s.Binary)
}

// List is every top-level test of the suite, in the binary's order.
func (s *Suite) List() ([]string, error) {
	cmd := exec.Command(s.Binary, "-test.list", ".*")
	cmd.Dir = s.Dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the tests of %s: %w", s.Binary, err)
	}
	var tests []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "Test") {
			tests = append(tests, l)
		}
	}
	return tests, nil
}
