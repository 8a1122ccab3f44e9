// Package failpoint names the points where a member can be made to crash, stall or fail on
// purpose, with upstream etcd's gofail names (go.etcd.io/gofail), so upstream's robustness
// tooling and ours address the same moments of a member's work by the same names.
//
// In a release build every point compiles to nothing (off.go: Hit is a constant false the
// compiler removes). Built with the tag `failpoints` (`make build-failpoints`), each point is a
// gofail failpoint (on.go): GOFAIL_FAILPOINTS sets terms at start and GOFAIL_HTTP serves
// upstream's HTTP interface to list, set, count and clear them.
//
// The files:
//
//	names.go every point's name, as upstream's gofail comments name it
//	on.go    a build with failpoints (-tags failpoints): At consults gofail's registry
//	off.go   a build without: every point is a no-op
package failpoint
