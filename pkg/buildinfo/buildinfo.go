// Package buildinfo is what a binary of this workspace was built as. Three values are stamped at
// link time, once for every binary:
//
//	-ldflags "-X etcdx/pkg/buildinfo.Level=3.6 -X etcdx/pkg/buildinfo.Release=0.31.0 -X etcdx/pkg/buildinfo.GitSHA=abc1234"
//
// Level is the upstream etcd line the binary implements; Version, the upstream patch release
// whose behaviour that level matches, follows from it and is what the binary reports wherever
// upstream reports a version (clients and upgrade guides gate on patch releases). Release and
// GitSHA are this project's own identity, shown only where an extra field harms nobody.
//
// The server reads its level from Level (etcdx/server/version); the CLIs print Version.
package buildinfo

import "fmt"

// Level is the etcd line this binary implements (major.minor). The default is the newest level
// the tree implements, so an unstamped build (go run, go test) behaves as the newest release.
var Level = "3.7"

// Release is this project's own release (the VERSION file).
var Release = "dev"

// GitSHA is the commit the binary was built from.
var GitSHA = "not-set"

// Version is the upstream patch release the level implements (3.7.3 at level 3.7).
var Version = UpstreamRelease(Level)

// APIVersion is the major.minor of the etcd v3 API the binaries speak, as upstream derives it.
var APIVersion = Level

// Name is this implementation's name, as it appears beside the upstream version.
const Name = "etcdx"

// upstreamReleases is, per level, the upstream patch release whose behaviour the tree matches
// at that level: the current patch of each upstream line.
var upstreamReleases = map[string]string{
	"3.5": "3.5.35",
	"3.6": "3.6.16",
	"3.7": "3.7.3",
}

// UpstreamRelease is the upstream patch release level implements; a level the tree does not
// implement reads as its .0 release (the server refuses to start at such a level).
func UpstreamRelease(level string) string {
	if v, ok := upstreamReleases[level]; ok {
		return v
	}
	return level + ".0"
}

// Identity is this implementation, its own release and commit: "etcdx 0.31.0 (git abc1234)".
func Identity() string {
	return fmt.Sprintf("%s %s (git %s)", Name, Release, GitSHA)
}

// LevelAtLeast says whether level is want or newer (both major.minor, "3.7"); an unreadable
// level is older than any.
func LevelAtLeast(level, want string) bool {
	var lm, ln, wm, wn int
	if _, err := fmt.Sscanf(level, "%d.%d", &lm, &ln); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(want, "%d.%d", &wm, &wn); err != nil {
		return false
	}
	return lm > wm || lm == wm && ln >= wn
}

// AtLeast says whether this binary's level is want or newer: where the CLIs, which know no more
// of versions than this package, print what a newer upstream line prints.
func AtLeast(want string) bool { return LevelAtLeast(Level, want) }
