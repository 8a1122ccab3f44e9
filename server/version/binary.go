package version

import (
	"fmt"
	"runtime"

	"etcdx/pkg/buildinfo"
)

// Local is the level this binary was built at (zero for a malformed stamp, which CheckBuild
// refuses at start).
func Local() Level {
	l, _ := ParseLevel(buildinfo.Level)
	return l
}

// CheckBuild refuses a binary stamped with a level this tree does not implement.
func CheckBuild(stamp string) error {
	l, err := ParseLevel(stamp)
	if err != nil {
		return fmt.Errorf("this binary was built with level %q: %w", stamp, err)
	}
	if !IsKnown(l) {
		return fmt.Errorf("this binary was built as %s, but the tree implements levels %s to %s", stamp, known[0], known[len(known)-1])
	}
	return nil
}

// MinClusterVersion is the lowest cluster version a binary at level bin can run in: one minor
// below (rolling upgrades go one minor at a time), or the oldest level the tree knows.
func MinClusterVersion(bin Level) string {
	if p := bin.Prev(); IsKnown(p) {
		return p.Full()
	}
	return bin.Full()
}

// Banner is what `etcd --version` prints: upstream's four lines (the version is the upstream
// release this level implements), then a fifth naming this implementation.
func Banner() string {
	return fmt.Sprintf("etcd Version: %s\nGit SHA: %s\nGo Version: %s\nGo OS/Arch: %s/%s\nImplementation: %s\n",
		buildinfo.Version, buildinfo.GitSHA, runtime.Version(), runtime.GOOS, runtime.GOARCH, buildinfo.Identity())
}
