package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"etcdx/pkg/buildinfo"
	"etcdx/upgradelab/cluster"
)

// UpstreamVersion is the upstream release a level implements, as upstream tags it: "v3.7.3".
func UpstreamVersion(level string) string { return "v" + buildinfo.UpstreamRelease(level) }

// previousLevel is the line before level ("3.7" -> "3.6"): upstream's etcd-last-release.
func previousLevel(level string) string {
	return map[string]string{"3.7": "3.6", "3.6": "3.5", "3.5": "3.4"}[level]
}

// debianEtcd34 is Debian's etcd-server package's binary (3.4.23): the only 3.4 release this
// machine can have, the last release of the 3.5 tests on both sides.
const debianEtcd34 = "/usr/bin/etcd"

// link makes dir/name point at target, replacing what was there.
func link(dir, name, target string) error {
	if _, err := os.Stat(target); err != nil {
		return fmt.Errorf("%s for %s: %w", target, name, err)
	}
	p := filepath.Join(dir, name)
	_ = os.Remove(p)
	return os.Symlink(target, p)
}

// LayOutOurs makes dir the bin dir upstream's tests expect, of our binaries at level from bin
// (make build's tree; make build-failpoints' bin/failpoints where it has the level: upstream's
// own CI runs its e2e tests on binaries with failpoints, and its tests skip what needs them
// otherwise). It returns what it chose, for the report.
func LayOutOurs(dir, bin, level string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tools := bin
	var etcd, last string
	fpEtcd, fpLast := filepath.Join(bin, "failpoints", "etcd"), filepath.Join(bin, "failpoints", "etcd-last-release")
	switch level {
	case "3.7":
		etcd, last = fpEtcd, fpLast
	case "3.6":
		tools = filepath.Join(bin, "levels", "3.6")
		etcd, last = fpLast, filepath.Join(bin, "levels", "3.5", "etcd")
	case "3.5":
		tools = filepath.Join(bin, "levels", "3.5")
		etcd, last = filepath.Join(bin, "failpoints", "etcd-3.5"), debianEtcd34
	default:
		return nil, fmt.Errorf("no level %q (3.7, 3.6 or 3.5)", level)
	}
	notes := []string{fmt.Sprintf("ours: etcd %s (%s), etcdctl and etcdutl from %s, etcd-last-release %s", etcd, implementation(etcd), tools, last)}
	for name, target := range map[string]string{"etcd": etcd, "etcdctl": filepath.Join(tools, "etcdctl"), "etcdutl": filepath.Join(tools, "etcdutl")} {
		if err := link(dir, name, target); err != nil {
			return nil, err
		}
	}
	if err := link(dir, "etcd-last-release", last); err != nil {
		notes = append(notes, fmt.Sprintf("ours: no etcd-last-release (%v): tests that need it skip", err))
	}
	return notes, nil
}

// LayOutUpstream makes dir the bin dir of upstream's release at level, with the previous line's
// current release as etcd-last-release, built from the Go module proxy (cached per machine).
// With failpoints, both etcd binaries are upstream's failpoint builds of those releases
// (BuildUpstreamFailpoints), as upstream's own CI runs its e2e and robustness tests; Debian's
// 3.4 has none.
func LayOutUpstream(dir, level string, failpoints bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	v := UpstreamVersion(level)
	up, err := cluster.BuildUpstream(v)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"etcd", "etcdctl", "etcdutl"} {
		if err := link(dir, name, filepath.Join(up, name)); err != nil {
			return nil, err
		}
	}
	build := "release builds, no failpoints"
	if failpoints {
		build = "etcd a failpoint build (gofail " + gofailVersion + "), etcdctl and etcdutl release builds"
		fp, err := BuildUpstreamFailpoints(v)
		if err != nil {
			return nil, err
		}
		if err := link(dir, "etcd", fp); err != nil {
			return nil, err
		}
	}
	prev := previousLevel(level)
	last := debianEtcd34
	if prev != "3.4" {
		pv := UpstreamVersion(prev)
		pdir, err := cluster.BuildUpstream(pv)
		if err != nil {
			return nil, err
		}
		last = filepath.Join(pdir, "etcd")
		if failpoints {
			if last, err = BuildUpstreamFailpoints(pv); err != nil {
				return nil, err
			}
		}
	}
	notes := []string{fmt.Sprintf("upstream: etcd, etcdctl and etcdutl %s (%s), etcd-last-release %s", v, build, last)}
	if err := link(dir, "etcd-last-release", last); err != nil {
		notes = append(notes, fmt.Sprintf("upstream: no etcd-last-release (%v): tests that need it skip", err))
	}
	return notes, nil
}

// implementation is what a binary of ours says it is (its release and commit), from --version.
func implementation(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "version unknown: " + err.Error()
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "Implementation: "); ok {
			return v
		}
	}
	return "version unknown"
}
