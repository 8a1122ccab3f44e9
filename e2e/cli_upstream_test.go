package e2e

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// runCLI runs bin to completion without a terminal and returns its exit status, standard error,
// and standard output.
func runCLI(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String(), stdout.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String(), stdout.String()
}

var errorLine = regexp.MustCompile(`(?m)^Error: .*$`)

// Command lines etcdctl and etcdutl cannot run, through upstream 3.6.16's binaries and ours:
// the same exit status and the same "Error:" line (the whole of standard error where upstream's
// is deterministic: unknown commands with their suggestions), and command prefixes resolved the
// same way. None of them reaches a server.
func TestCLIErrorsMatchUpstream(t *testing.T) {
	dead := "--endpoints=127.0.0.1:1"
	dataDir := t.TempDir()
	cases := []struct {
		tool      string
		args      []string
		wholeErrs bool
	}{
		{"etcdctl", []string{dead, "bogus"}, true},
		{"etcdctl", []string{dead, "gett"}, true},
		{"etcdctl", []string{dead, "lese", "grant", "10"}, true},
		{"etcdctl", []string{dead, "membr", "list"}, true},
		{"etcdctl", []string{dead, "get", "--bogus", "k"}, false},
		{"etcdctl", []string{dead, "--dial-timeout=abc", "get", "k"}, false},
		{"etcdctl", []string{dead, "put", "k", "v", "--lease=zz"}, false},
		// Prefixes: compaction, lease grant, move-leader, member list (all stop before dialing).
		{"etcdctl", []string{dead, "compact"}, true},
		{"etcdctl", []string{dead, "le", "gr"}, true},
		{"etcdctl", []string{dead, "mov"}, true},
		{"etcdctl", []string{dead, "member", "bogus"}, true},
		{"etcdutl", []string{"bogus"}, false},
		{"etcdutl", []string{"defrag", "--bogus"}, false},
		{"etcdutl", []string{"defrag"}, false},
		{"etcdutl", []string{"migrate"}, false},
		{"etcdutl", []string{"migrate", "--data-dir", dataDir}, false},
		{"etcdutl", []string{"migrate", "--data-dir", dataDir, "--target-version", "3"}, true},
		{"etcdutl", []string{"migrate", "--data-dir", dataDir, "--target-version", "3.4"}, true},
		{"etcdutl", []string{"migrate", "--data-dir", dataDir, "--target-version", "3.x"}, true},
		{"etcdutl", []string{"mig", "--data-dir", dataDir, "--target-version", "3.4.0"}, true},
		{"etcdutl", []string{"hashkv"}, false},
		{"etcdutl", []string{"snapshot", "status"}, true},
		{"etcdutl", []string{"sn", "st"}, true},
		{"etcdutl", []string{"snapshot", "restore"}, true},
		{"etcdutl", []string{"snapshot", "status", "/etc/hostname", "-w", "xml"}, true},
		{"etcdutl", []string{"snapshot"}, true},
		{"etcdutl", nil, true},
	}
	for _, c := range cases {
		ucode, uerr, _ := runCLI(t, UpstreamBinary(t, c.tool), c.args...)
		ocode, oerr, _ := runCLI(t, Binary(t, c.tool), c.args...)
		if !c.wholeErrs {
			uerr, oerr = errorLine.FindString(uerr), errorLine.FindString(oerr)
		}
		if ucode != ocode || uerr != oerr {
			t.Errorf("%s %s\n--- upstream (exit %d) ---\n%s\n--- ours (exit %d) ---\n%s", c.tool, strings.Join(c.args, " "), ucode, uerr, ocode, oerr)
		}
	}
}
