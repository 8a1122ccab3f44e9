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

// WireMinClusterVersion is what a member announces to its peers as X-Min-Cluster-Version:
// upstream 3.5, 3.6 and 3.7 all send 3.0.0, whatever their level, and upstream 3.4 refuses a peer
// whose announced minimum is above its own version (so a 3.4 cluster could not take a 3.5 member
// of ours in a rolling upgrade). Which versions may run together is CheckPeer's and CheckRun's
// rule, on the versions themselves.
const WireMinClusterVersion = "3.0.0"

// Banner is what `etcd --version` prints: upstream's four lines (the version is the upstream
// release this level implements), then a fifth naming this implementation.
func Banner() string {
	return fmt.Sprintf("etcd Version: %s\nGit SHA: %s\nGo Version: %s\nGo OS/Arch: %s/%s\nImplementation: %s\n",
		buildinfo.Version, buildinfo.GitSHA, runtime.Version(), runtime.GOOS, runtime.GOARCH, buildinfo.Identity())
}
