package kubeapi

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"etcdx/upgradelab/cluster"
)

// Version is the Kubernetes release whose kube-apiserver the recording runs.
const Version = "v1.37.2"

// Build builds kube-apiserver at version from the module proxy (once per machine, cached beside
// upstream etcd's builds) and returns its path. k8s.io/kubernetes points its staging modules
// (k8s.io/api, k8s.io/apiserver, ...) at directories its module zip leaves out, so the build
// runs in a copy of the module whose go.mod points them at their published releases instead
// (v0.MINOR.PATCH for Kubernetes v1.MINOR.PATCH).
func Build(version string) (string, error) {
	dir := cluster.UpstreamDir("kubernetes-" + version)
	bin := filepath.Join(dir, "kube-apiserver")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	mod, err := cluster.TempModule(dir, "kubebuild")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(mod)
	out, err := cluster.GoIn(mod, "mod", "download", "-json", "k8s.io/kubernetes@"+version)
	if err != nil {
		return "", fmt.Errorf("download k8s.io/kubernetes@%s: %v\n%s", version, err, out)
	}
	var dl struct{ Dir string }
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &dl); err != nil || dl.Dir == "" {
		return "", fmt.Errorf("download k8s.io/kubernetes@%s: no module directory in %q", version, out)
	}
	src := filepath.Join(mod, "kubernetes")
	if err := copyTree(dl.Dir, src); err != nil {
		return "", fmt.Errorf("copy k8s.io/kubernetes: %w", err)
	}
	if err := pinStaging(filepath.Join(src, "go.mod"), "v0"+strings.TrimPrefix(version, "v1")); err != nil {
		return "", err
	}
	for _, f := range []string{"go.work", "go.work.sum"} {
		os.Remove(filepath.Join(src, f))
	}
	tmp := filepath.Join(mod, "kube-apiserver")
	if out, err := cluster.GoIn(src, "build", "-trimpath", "-o", tmp, "./cmd/kube-apiserver"); err != nil {
		return "", fmt.Errorf("build kube-apiserver %s: %v\n%s", version, err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// stagingReplace is one "k8s.io/x => ./staging/src/k8s.io/x" line of k8s.io/kubernetes' go.mod.
var stagingReplace = regexp.MustCompile(`(?m)^(\s*)(k8s\.io/[\w.-]+) => \./staging/src/k8s\.io/[\w.-]+$`)

// pinStaging points every staging replace of the go.mod at path to the published release.
func pinStaging(path, release string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	n := 0
	pinned := stagingReplace.ReplaceAllStringFunc(string(b), func(line string) string {
		n++
		m := stagingReplace.FindStringSubmatch(line)
		return m[1] + m[2] + " => " + m[2] + " " + release
	})
	if n == 0 {
		return fmt.Errorf("%s: no staging replace to pin", path)
	}
	return os.WriteFile(path, []byte(pinned), 0o644)
}

// copyTree copies the module cache's read-only tree into a writable one, leaving out vendor/
// (the build resolves modules itself).
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			if rel == "vendor" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
}
