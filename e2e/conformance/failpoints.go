package conformance

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"etcdx/upgradelab/cluster"
)

// gofailVersion is the gofail whose code generator and runtime make upstream's failpoint build.
const gofailVersion = "v0.2.0"

// BuildUpstreamFailpoints builds upstream's etcd at version with its gofail failpoints enabled,
// as upstream's own `make build-failpoints` does for its robustness CI: the server module's
// source from the Go module proxy, copied, `gofail enable` on every package that declares
// failpoints, built against that copy. Once per machine; it returns the binary's path.
func BuildUpstreamFailpoints(version string) (string, error) {
	dir := filepath.Join(cluster.UpstreamDir(version), "failpoints")
	bin := filepath.Join(dir, "etcd")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	mod, err := cluster.TempModule(dir, "upstreamfailpoints")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(mod)
	run := func(in string, args ...string) error {
		out, err := cluster.GoIn(in, args...)
		if err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	const server = "go.etcd.io/etcd/server/v3"
	if err := run(mod, "get", server+"@"+version, "go.etcd.io/gofail@"+gofailVersion); err != nil {
		return "", err
	}
	srcOut, err := cluster.GoIn(mod, "list", "-m", "-f", "{{.Dir}}", server)
	if err != nil {
		return "", fmt.Errorf("find %s@%s: %v\n%s", server, version, err, srcOut)
	}
	src, copyDir := strings.TrimSpace(srcOut), filepath.Join(mod, "server")
	// The module cache is read-only: the generator rewrites a copy.
	if out, err := exec.Command("cp", "-r", src, copyDir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy %s: %v\n%s", src, err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", copyDir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("chmod %s: %v\n%s", copyDir, err, out)
	}
	pkgs, err := failpointPackages(copyDir)
	if err != nil {
		return "", err
	}
	if err := run(copyDir, append([]string{"run", "go.etcd.io/gofail@" + gofailVersion, "enable"}, pkgs...)...); err != nil {
		return "", err
	}
	if err := run(copyDir, "mod", "edit", "-require=go.etcd.io/gofail@"+gofailVersion); err != nil {
		return "", err
	}
	if err := run(mod, "mod", "edit", "-replace="+server+"=./server"); err != nil {
		return "", err
	}
	tmp := filepath.Join(mod, "etcd")
	if err := run(mod, "build", "-trimpath", "-o", tmp, server); err != nil {
		return "", err
	}
	return bin, os.Rename(tmp, bin)
}

// failpointPackages are the directories under root (relative, "./x") whose Go files declare a
// gofail failpoint.
func failpointPackages(root string) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("// gofail:")) {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			seen["./"+filepath.ToSlash(rel)] = true
		}
		return nil
	})
	var pkgs []string
	for p := range seen {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	if err == nil && len(pkgs) == 0 {
		err = fmt.Errorf("no gofail failpoints under %s", root)
	}
	return pkgs, err
}
