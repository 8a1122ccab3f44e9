// Package version holds the server version stamped at build time, the levels (major.minor) this
// tree implements, and the table of features with the level each needs. Code that needs to know
// whether a behaviour is on asks this package; it never compares version strings itself.
package version

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

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

// Level is a major.minor version: the unit cluster and storage versions move in.
type Level struct {
	Major, Minor int64
}

// The levels this tree implements, oldest first. A binary built at one of them behaves as it.
// 3.7 has the 3.6 schema and no new features yet; the default build stays 3.6 (issue 4), and a
// 3.7 build exists so skip-version upgrades can be refused by a real binary.
var (
	V3_5  = Level{3, 5}
	V3_6  = Level{3, 6}
	V3_7  = Level{3, 7}
	known = []Level{V3_5, V3_6, V3_7}
)

// Known lists the levels this tree implements, oldest first.
func Known() []Level { return append([]Level(nil), known...) }

// IsKnown reports whether l is a level this tree implements.
func IsKnown(l Level) bool {
	for _, k := range known {
		if k == l {
			return true
		}
	}
	return false
}

// IsZero reports an unset level (e.g. a cluster version not decided yet).
func (l Level) IsZero() bool { return l == Level{} }

// String is "3.6".
func (l Level) String() string { return fmt.Sprintf("%d.%d", l.Major, l.Minor) }

// Full is "3.6.0", the form upstream stores and reports cluster and storage versions in.
func (l Level) Full() string { return fmt.Sprintf("%d.%d.0", l.Major, l.Minor) }

// Compare returns -1, 0 or 1.
func (l Level) Compare(o Level) int {
	switch {
	case l.Major != o.Major:
		return sign(l.Major - o.Major)
	default:
		return sign(l.Minor - o.Minor)
	}
}

// Less reports l < o.
func (l Level) Less(o Level) bool { return l.Compare(o) < 0 }

// Next is the level one minor above l.
func (l Level) Next() Level { return Level{l.Major, l.Minor + 1} }

// Prev is the level one minor below l (a downgrade target).
func (l Level) Prev() Level { return Level{l.Major, l.Minor - 1} }

func sign(d int64) int {
	switch {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}

// ParseLevel reads "3.6", "3.6.0" or "3.6.2-rc.1" and keeps the major.minor.
func ParseLevel(s string) (Level, error) {
	v, err := Parse(s)
	if err != nil {
		return Level{}, err
	}
	return Level{v.Major, v.Minor}, nil
}

// Parse reads "3.6", "3.6.0" or "3.6.0-rc.1".
func Parse(s string) (*semver.Version, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if v, err := semver.NewVersion(s); err == nil {
		return v, nil
	}
	if parts := strings.Split(s, "."); len(parts) == 2 {
		if _, err := strconv.ParseUint(parts[0], 10, 32); err == nil {
			if _, err := strconv.ParseUint(parts[1], 10, 32); err == nil {
				return semver.NewVersion(s + ".0")
			}
		}
	}
	return nil, fmt.Errorf("invalid version %q (want major.minor or major.minor.patch)", s)
}

// Server returns the parsed server version. A malformed stamp is caught by CheckBuild at start.
func Server() *semver.Version {
	v, err := Parse(Version)
	if err != nil {
		return &semver.Version{}
	}
	return v
}

// Local is the level this binary was built at.
func Local() Level {
	v := Server()
	return Level{v.Major, v.Minor}
}

// CheckBuild refuses a binary stamped with a version this tree does not implement.
func CheckBuild() error {
	if _, err := Parse(Version); err != nil {
		return fmt.Errorf("this binary was built with version %q: %w", Version, err)
	}
	if !IsKnown(Local()) {
		return fmt.Errorf("this binary was built as %s, but the tree implements levels %s to %s", Version, known[0], known[len(known)-1])
	}
	return nil
}

// MinClusterVersion is the lowest cluster version this binary can run in: one minor below its own
// level (rolling upgrades go one minor at a time), or the oldest level the tree knows.
func MinClusterVersion() string {
	l := Local()
	if p := l.Prev(); IsKnown(p) {
		return p.Full()
	}
	return l.Full()
}

// Banner is what `etcd --version` prints.
func Banner() string {
	return fmt.Sprintf("etcd Version: %s\nGit SHA: %s\nGo Version: %s\nGo OS/Arch: %s/%s\n",
		Version, GitSHA, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
