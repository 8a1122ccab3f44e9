package version

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/coreos/go-semver/semver"
)

// Level is a major.minor version: the unit cluster and storage versions move in.
type Level struct {
	Major, Minor int64
}

// The levels this tree implements, oldest first. A binary built at one of them behaves as that
// upstream line's current patch release (pkg/buildinfo); the default build is the newest.
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

// Decided says whether l is a cluster version the members agreed on. Upstream records 3.0, its
// minimum, before the leader's first decision (up to 4 s after a cluster of 3.5 members starts),
// so a data dir stopped in that window holds 3.0: no level any member runs.
func (l Level) Decided() bool { return !l.IsZero() && l != Level{3, 0} }

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
