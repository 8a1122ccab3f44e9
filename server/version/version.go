// Package version holds the server version stamped at build time and the helpers that parse and
// compare etcd versions. Code that needs to know whether a behaviour is on asks this package;
// it never compares version strings itself.
package version

import (
	"fmt"
	"runtime"

	"github.com/coreos/go-semver/semver"
)

// Version and GitSHA are set with -ldflags "-X etcdx/server/version.Version=3.6.0 -X ...GitSHA=abc".
// The default is the newest level this tree implements.
var (
	Version = "3.6.0"
	GitSHA  = "not-set"
)

// APIVersion is the major.minor of the etcd v3 API this server speaks.
const APIVersion = "3.6"

// Server returns the parsed server version. A malformed stamp is a build error, so it falls back
// to 0.0.0 rather than panicking at run time.
func Server() *semver.Version {
	v, err := semver.NewVersion(Version)
	if err != nil {
		return &semver.Version{}
	}
	return v
}

// MajorMinor returns v with its patch and pre-release cleared: the "level" of a version.
func MajorMinor(v *semver.Version) *semver.Version {
	return &semver.Version{Major: v.Major, Minor: v.Minor}
}

// Parse reads "3.6", "3.6.0" or "3.6.0-rc.1".
func Parse(s string) (*semver.Version, error) {
	if v, err := semver.NewVersion(s); err == nil {
		return v, nil
	}
	v, err := semver.NewVersion(s + ".0")
	if err != nil {
		return nil, fmt.Errorf("invalid version %q: %w", s, err)
	}
	return v, nil
}

// Banner is what `etcd --version` prints.
func Banner() string {
	return fmt.Sprintf("etcd Version: %s\nGit SHA: %s\nGo Version: %s\nGo OS/Arch: %s/%s\n",
		Version, GitSHA, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// MinClusterVersion is the lowest cluster version this binary can run in: one minor below its
// own level (rolling upgrades go one minor at a time).
func MinClusterVersion() string {
	v := Server()
	if v.Minor == 0 {
		return fmt.Sprintf("%d.0.0", v.Major)
	}
	return fmt.Sprintf("%d.%d.0", v.Major, v.Minor-1)
}
