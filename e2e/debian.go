package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Debian34Version is the etcd Debian 12 ships (package etcd-server): the 3.4 a distribution's
// cluster starts from.
const Debian34Version = "3.4.23"

var debian34 struct {
	once sync.Once
	path string
	err  error
}

// Debian34Binary is Debian's etcd-server 3.4.23, taken from the package (apt-get download, then
// dpkg -x) once per machine and kept in the user cache directory. A machine without apt or the
// package skips the test saying so (a failure under E2E_NO_SKIP=1).
func Debian34Binary(t testing.TB) string {
	t.Helper()
	debian34.once.Do(func() { debian34.path, debian34.err = fetchDebian34() })
	if debian34.err != nil {
		cannotRun(t, "Debian's etcd-server %s: %v", Debian34Version, debian34.err)
	}
	return debian34.path
}

func fetchDebian34() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "etcdx-debian", "etcd-server-"+Debian34Version)
	bin := filepath.Join(dir, "usr", "bin", "etcd")
	if out, err := exec.Command(bin, "--version").Output(); err == nil && strings.Contains(string(out), "etcd Version: "+Debian34Version) {
		return bin, nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", fmt.Errorf("no apt-get here")
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
		// The package lists may not be there yet (a fresh machine).
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if out, err := exec.Command("dpkg", "-x", debs[0], dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg -x: %v: %s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(out), "etcd Version: "+Debian34Version) {
		return "", fmt.Errorf("the package's etcd is not %s: %v %s", Debian34Version, err, out)
	}
	return bin, nil
}
