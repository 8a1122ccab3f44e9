// Package buildinfo is what a binary of this workspace was built as. Version and GitSHA are
// stamped at link time, once for every binary:
//
//	-ldflags "-X etcdx/pkg/buildinfo.Version=3.6.0 -X etcdx/pkg/buildinfo.GitSHA=abc1234"
//
// The server reads its level from Version (etcdx/server/version); the CLIs only print it.
package buildinfo

// Version is the release version; the default is the newest level the tree implements, so an
// unstamped build (go run, go test) behaves as the newest release.
var Version = "3.6.0"

// GitSHA is the commit the binary was built from.
var GitSHA = "not-set"

// APIVersion is the major.minor of the etcd v3 API the binaries speak.
const APIVersion = "3.6"
