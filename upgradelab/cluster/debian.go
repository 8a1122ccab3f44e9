package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// DebianSubject matches subjects that name the etcd of Debian's etcd-server package:
// debian-3.4.23. Upstream's 3.4 releases cannot be built from the Go module proxy (their module
// path has no /v3), so a distribution's package is where a 3.4 binary comes from.
var DebianSubject = regexp.MustCompile(`^debian-(3\.[0-9]+\.[0-9]+)$`)

// DebianDir is where FetchDebian unpacks a version of the package: the user's cache directory.
func DebianDir(version string) string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "etcdx-debian", "etcd-server-"+version)
}

// FetchDebian returns Debian's etcd binary of version (3.4.23), taken once per machine from the
// etcd-server package the machine's apt sources offer (apt-get download, dpkg -x; the package
// lists are updated once when the download fails). The sources offer one version: asking for
// another is an error that names the one offered.
func FetchDebian(version string) (string, error) {
	dir := DebianDir(version)
	bin := filepath.Join(dir, "usr", "bin", "etcd")
	if reportsVersion(bin, version) == nil {
		return bin, nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", fmt.Errorf("debian etcd-server %s: no apt-get on this machine", version)
	}
	work, err := os.MkdirTemp("", "etcd-server-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	download := func() ([]byte, error) {
		cmd := exec.Command("apt-get", "download", "etcd-server")
		cmd.Dir = work
		return cmd.CombinedOutput()
	}
	if out, err := download(); err != nil {
		if uout, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			return "", fmt.Errorf("apt-get download etcd-server: %v: %s; apt-get update: %v: %s", err, out, uerr, uout)
		}
		if out, err := download(); err != nil {
			return "", fmt.Errorf("apt-get download etcd-server: %v: %s", err, out)
		}
	}
	debs, _ := filepath.Glob(filepath.Join(work, "etcd-server_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download etcd-server left %v", debs)
	}
	// Unpacked beside the cache first, renamed into place whole, so concurrent fetchers never
	// see half a tree.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "unpack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.Command("dpkg", "-x", debs[0], tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg -x %s: %v: %s", filepath.Base(debs[0]), err, out)
	}
	if err := reportsVersion(filepath.Join(tmp, "usr", "bin", "etcd"), version); err != nil {
		return "", fmt.Errorf("debian etcd-server %s: %w", version, err)
	}
	if err := os.Rename(tmp, dir); err != nil && reportsVersion(bin, version) != nil {
		return "", err
	}
	return bin, nil
}

// reportsVersion says why bin is not etcd version (nil when it is).
func reportsVersion(bin, version string) error {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return err
	}
	m := versionLine.FindStringSubmatch(string(out))
	if m == nil {
		return fmt.Errorf("%s --version printed no etcd version", bin)
	}
	if m[1] != version {
		return fmt.Errorf("the package offered here is etcd %s", m[1])
	}
	return nil
}

// FetchedSubject says whether the lab fetches subject's binary itself (upstream-X.Y.Z, built
// from the Go module proxy; debian-X.Y.Z, from Debian's package), and at which version.
func FetchedSubject(subject string) (version string, ok bool) {
	for _, re := range []*regexp.Regexp{UpstreamSubject, DebianSubject} {
		if m := re.FindStringSubmatch(subject); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// Fetch returns the etcd binary of a subject FetchedSubject accepts, building or downloading it
// once per machine.
func Fetch(subject string) (string, error) {
	version, ok := FetchedSubject(subject)
	switch {
	case !ok:
		return "", fmt.Errorf("%s names no release the lab fetches (upstream-X.Y.Z or debian-X.Y.Z)", subject)
	case strings.HasPrefix(subject, "debian-"):
		return FetchDebian(version)
	}
	dir, err := BuildUpstream("v" + version)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "etcd"), nil
}

// FetchSource says where Fetch takes subject from: the progress line of a fetch.
func FetchSource(subject string) string {
	version, _ := FetchedSubject(subject)
	if strings.HasPrefix(subject, "debian-") {
		return fmt.Sprintf("Debian's etcd-server %s: apt-get download, or taken from %s", version, DebianDir(version))
	}
	return fmt.Sprintf("upstream etcd v%s: building from the Go module proxy, or taken from %s", version, UpstreamDir("v"+version))
}
