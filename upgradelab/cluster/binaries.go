package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

var versionLine = regexp.MustCompile(`(?m)^etcd Version: (3\.[0-9]+)\.[0-9]+`)

// Level runs `bin --version` and returns its major.minor.
func Level(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	m := versionLine.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("%s --version printed no etcd version:\n%s", bin, out)
	}
	return m[1], nil
}

// IsLevel says whether a subject names a level (3.6) rather than a binary (upstream-3.5.17).
func IsLevel(s string) bool { return levelName.MatchString(s) }

var levelName = regexp.MustCompile(`^3\.[0-9]+$`)

// Binaries maps subjects (levels, or names given on the command line) to etcd binaries.
type Binaries map[string]string

// FromDir finds the etcd binaries in dir (files named etcd or etcd-*) and asks each its level;
// the first found per level wins, in name order.
func FromDir(dir string) (Binaries, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, e := range entries {
		if !e.IsDir() && (e.Name() == "etcd" || strings.HasPrefix(e.Name(), "etcd-")) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	bins := Binaries{}
	for _, n := range names {
		p := filepath.Join(dir, n)
		lvl, err := Level(p)
		if err != nil {
			continue // not an etcd server (etcdctl-like names are filtered above; this is a guard)
		}
		if _, ok := bins[lvl]; !ok {
			bins[lvl] = p
		}
	}
	return bins, nil
}

// Need checks that every subject has a binary.
func (b Binaries) Need(levels []string) error {
	var missing []string
	for _, l := range levels {
		if b[l] == "" {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		var have []string
		for l, p := range b {
			have = append(have, l+"="+p)
		}
		sort.Strings(have)
		return fmt.Errorf("no etcd binary for %s (have: %s); pass --binary LEVEL=PATH, --binary NAME=PATH or --bin-dir",
			strings.Join(missing, ", "), strings.Join(have, " "))
	}
	return nil
}
