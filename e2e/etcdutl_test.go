package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func etcdutl(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return runTool(t, "etcdutl", args...)
}

// runTool runs one of our built binaries to completion and returns its exit status and
// combined output.
func runTool(t *testing.T, name string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(Binary(t, name), args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func TestEtcdutlSnapshotErrors(t *testing.T) {
	m := NewMember(t)
	m.Start()
	fillKeyspace(t, m.Client())
	snap := saveSnapshot(t, m.Client())
	dir := t.TempDir()

	code, out := etcdutl(t, "snapshot", "status", snap, "-w", "json")
	if code != 0 || !strings.Contains(out, `"totalKey":40`) || !strings.Contains(out, `"revision":62`) {
		t.Fatalf("status: %d %s", code, out)
	}
	if code, out := etcdutl(t, "snapshot", "status", filepath.Join(dir, "nope.db")); code != 1 || !strings.Contains(out, "nope.db") {
		t.Fatalf("missing file: %d %s", code, out)
	}
	if code, out := etcdutl(t, "snapshot", "status"); code != 128 || !strings.Contains(out, "snapshot status requires exactly one argument") {
		t.Fatalf("no argument: %d %s", code, out)
	}
	if code, out := etcdutl(t, "snapshot", "status", snap, "-w", "xml"); code != 4 || !strings.Contains(out, "unsupported output format") {
		t.Fatalf("bad format: %d %s", code, out)
	}

	// One flipped byte fails the integrity check; nothing is written.
	data, _ := os.ReadFile(snap)
	data[len(data)/3] ^= 0x01
	bad := filepath.Join(dir, "bad.db")
	os.WriteFile(bad, data, 0o600)
	target := filepath.Join(dir, "restored")
	code, out = etcdutl(t, "snapshot", "restore", bad, "--data-dir", target)
	if code != 1 || !strings.Contains(out, "Error: expected sha256 [") { // upstream's words
		t.Fatalf("corrupt snapshot: %d %s", code, out)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("a failed restore left a data dir")
	}
	// A data dir in use is never overwritten.
	if code, out := etcdutl(t, "snapshot", "restore", snap, "--data-dir", m.DataDir); code != 1 || !strings.Contains(out, "not empty") {
		t.Fatalf("restore over existing data: %d %s", code, out)
	}
	// Not a snapshot at all.
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, []byte(strings.Repeat("junk", 1000)), 0o600)
	if code, out := etcdutl(t, "snapshot", "restore", junk, "--data-dir", target, "--skip-hash-check"); code != 1 || !strings.Contains(out, "not a valid") {
		t.Fatalf("junk file: %d %s", code, out)
	}
	if code, out := etcdutl(t, "snapshot", "restore", snap, "--data-dir", target, "--name", "x", "--initial-cluster", "y=http://127.0.0.1:1"); code != 1 || !strings.Contains(out, `couldn't find local name "x" in the initial cluster configuration`) {
		t.Fatalf("name missing from cluster: %d %s", code, out)
	}
}
