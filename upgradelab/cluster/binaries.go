package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

var versionLine = regexp.MustCompile(`(?m)^etcd Version: ((3\.[0-9]+)\.[0-9]+)`)

// Binary is an etcd server binary as a run records it: where it is, what it says it is, and
// its checksum (so a report names exactly what ran).
type Binary struct {
	Path string `json:"path"`
	// Version is the full version --version prints (3.5.35), Level its major.minor.
	Version string `json:"version"`
	Level   string `json:"level"`
	SHA256  string `json:"sha256"`
	// VersionOutput is everything --version printed.
	VersionOutput string `json:"versionOutput"`
}

// Inspect runs `path --version` and hashes the file.
func Inspect(path string) (Binary, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Binary{}, err
	}
	out, err := exec.Command(abs, "--version").Output()
	if err != nil {
		return Binary{}, fmt.Errorf("%s --version: %w", abs, err)
	}
	m := versionLine.FindStringSubmatch(string(out))
	if m == nil {
		return Binary{}, fmt.Errorf("%s --version printed no etcd version:\n%s", abs, out)
	}
	f, err := os.Open(abs)
	if err != nil {
		return Binary{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Binary{}, fmt.Errorf("hash %s: %w", abs, err)
	}
	return Binary{Path: abs, Version: m[1], Level: m[2], SHA256: hex.EncodeToString(h.Sum(nil)),
		VersionOutput: strings.TrimSpace(string(out))}, nil
}

// Level runs `bin --version` and returns its major.minor.
func Level(bin string) (string, error) {
	b, err := Inspect(bin)
	return b.Level, err
}

// IsLevel says whether a subject names a level (3.6) rather than a version (3.5.35) or a
// binary (upstream-3.5.35).
func IsLevel(s string) bool { return levelName.MatchString(s) }

// IsVersion says whether a subject is a full version (3.5.35).
func IsVersion(s string) bool { return fullVersion.MatchString(s) }

var (
	levelName   = regexp.MustCompile(`^3\.[0-9]+$`)
	fullVersion = regexp.MustCompile(`^3\.[0-9]+\.[0-9]+$`)
)

// Binaries maps subjects (levels, full versions, or names given on the command line) to
// etcd binaries.
type Binaries map[string]Binary

// FromDir finds the etcd binaries in dir (files named etcd or etcd-*) and asks each its
// version: each is the subject of its full version, and the first in name order of a level
// is that level's.
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
		b, err := Inspect(filepath.Join(dir, n))
		if err != nil {
			continue // not an etcd server (etcdctl-like names are filtered above; this is a guard)
		}
		if _, ok := bins[b.Level]; !ok {
			bins[b.Level] = b
		}
		if _, ok := bins[b.Version]; !ok {
			bins[b.Version] = b
		}
	}
	return bins, nil
}

// Add records the binary at path as subject: a level or a full version must match what the
// binary reports; any other name is a subject of its own, of whatever version it reports.
func (b Binaries) Add(subject, path string) error {
	bin, err := Inspect(path)
	if err != nil {
		return err
	}
	switch {
	case IsLevel(subject) && bin.Level != subject:
		return fmt.Errorf("that binary is level %s", bin.Level)
	case IsVersion(subject) && bin.Version != subject:
		return fmt.Errorf("that binary is version %s", bin.Version)
	}
	b[subject] = bin
	return nil
}

// Need checks that every subject has a binary.
func (b Binaries) Need(subjects []string) error {
	var missing []string
	for _, l := range subjects {
		if b[l].Path == "" {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		var have []string
		for l, bin := range b {
			have = append(have, l+"="+bin.Path)
		}
		sort.Strings(have)
		return fmt.Errorf("no etcd binary for %s (have: %s); pass --binary SUBJECT=PATH (a level, a version or a name) or --bin-dir",
			strings.Join(missing, ", "), strings.Join(have, " "))
	}
	return nil
}
