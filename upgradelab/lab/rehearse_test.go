package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etcdx/server/schema"
)

// TestRehearsalDatabase: what a rehearsal restores from each kind of source, and whether it
// checks the hash `snapshot save` appends (a file 32 bytes past a page multiple has one).
func TestRehearsalDatabase(t *testing.T) {
	dir := t.TempDir()
	write := func(path string, size int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	saved := filepath.Join(dir, "backup.db")
	write(saved, 4096*4+32)
	dataDir := filepath.Join(dir, "m1.etcd")
	write(schema.BackendPath(dataDir), 4096*4)
	for _, tc := range []struct {
		name, source, path string
		hashed             bool
		err                string
	}{
		{"a saved snapshot", saved, saved, true, ""},
		{"a member's db file", schema.BackendPath(dataDir), schema.BackendPath(dataDir), false, ""},
		{"a stopped member's data dir", dataDir, schema.BackendPath(dataDir), false, ""},
		{"a directory that is no data dir", dir, "", false, "is a directory but no data dir"},
		{"nothing there", filepath.Join(dir, "none"), "", false, "no such file"},
	} {
		path, hashed, err := Rehearsal{Snapshot: tc.source}.Database()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || path != tc.path || hashed != tc.hashed):
			t.Errorf("%s: %s, hashed %v, %v; want %s, hashed %v", tc.name, path, hashed, err, tc.path, tc.hashed)
		}
	}
}

func TestPrefixOf(t *testing.T) {
	for k, want := range map[string]string{
		"/registry/pods/default/web-1": "/registry/pods",
		"/registry/ranges/serviceips":  "/registry/ranges",
		"/app/config":                  "/app",
		"compact_rev_key":              "compact_rev_key",
		"a/b/c":                        "a/b",
		"/solo":                        "/solo",
	} {
		if got := prefixOf(k); got != want {
			t.Errorf("prefixOf(%q) = %q, want %q", k, got, want)
		}
	}
}
