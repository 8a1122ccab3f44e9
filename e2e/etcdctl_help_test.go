package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// etcdctlPaths are the command paths whose --help the help test compares: every command of
// 3.5, 3.6 and 3.7 (a path a line lacks is compared as the error it gives).
var etcdctlPaths = []string{"", "alarm", "alarm disarm", "alarm list", "auth", "auth disable", "auth enable",
	"auth status", "check", "check datascale", "check perf", "compaction", "completion", "defrag", "del", "downgrade",
	"downgrade cancel", "downgrade enable", "downgrade validate", "elect", "endpoint", "endpoint hashkv",
	"endpoint health", "endpoint status", "get", "help", "lease", "lease grant", "lease keep-alive", "lease list",
	"lease revoke", "lease timetolive", "lock", "make-mirror", "member", "member add", "member list", "member promote",
	"member remove", "member update", "move-leader", "put", "role", "role add", "role delete", "role get",
	"role grant-permission", "role list", "role revoke-permission", "snapshot", "snapshot save", "snapshot restore",
	"snapshot status", "txn", "user",
	"user add", "user delete", "user get", "user grant-role", "user list", "user passwd", "user revoke-role",
	"version", "watch", "options"}

// TestEtcdctlHelpAsUpstream: `etcdctl <command> --help` of ours at each level prints what
// upstream's etcdctl of that line prints, byte for byte (3.7's grouped cobra help with hidden
// global flags and the options command; 3.6's and 3.5's NAME/USAGE/OPTIONS layout), with the
// same exit status and standard error; so do `etcdctl help <command>` and a command line with an
// unknown flag (the usage after the error: on standard error at 3.7, standard output before).
func TestEtcdctlHelpAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, c := range []struct{ level, upstream string }{{OldestLevel, Upstream35Version}, {LastReleaseLevel, Upstream36Version}, {CurrentLevel, Upstream37Version}} {
		ours, up := ToolAt(t, c.level, "etcdctl"), UpstreamBinaryAt(t, c.upstream, "etcdctl")
		var lines [][]string
		for _, p := range etcdctlPaths {
			lines = append(lines, append(strings.Fields(p), "--help"))
		}
		lines = append(lines, []string{"help", "lease", "grant"}, []string{"get", "--bogus", "k"}, []string{"member", "add", "--bogus"})
		for _, args := range lines {
			ucode, uerr, uout := runCLI(t, up, args...)
			ocode, oerr, oout := runCLI(t, ours, args...)
			if ucode != ocode || uerr != oerr || uout != oout {
				t.Errorf("level %s: etcdctl %s\n--- upstream %s (exit %d) ---\n%s%s\n--- ours (exit %d) ---\n%s%s", c.level, strings.Join(args, " "),
					c.upstream, ucode, uerr, uout, ocode, oerr, oout)
			}
		}
	}
}

// TestEtcdctl35OfflineCommandsAsUpstream: etcdctl 3.5's deprecated offline commands (snapshot
// status and restore, defrag --data-dir) at our level 3.5 against upstream 3.5.35's etcdctl:
// the same deprecation notes, exit statuses and snapshot status in every format (3.5's: every
// bucket's keys counted, no version column), restores that both implementations read back the
// same, and upstream's errors.
func TestEtcdctl35OfflineCommandsAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	ours, up := ToolAt(t, OldestLevel, "etcdctl"), UpstreamBinaryAt(t, Upstream35Version, "etcdctl")
	m := NewMember(t)
	m.Start()
	dir := t.TempDir()
	snap := filepath.Join(dir, "snap.db")
	if code, out := ctl(t, ours, "", "--endpoints="+m.ClientURL, "put", "k", "v"); code != 0 {
		t.Fatal(out)
	}
	if code, out := ctl(t, ours, "", "--endpoints="+m.ClientURL, "snapshot", "save", snap); code != 0 {
		t.Fatal(out)
	}
	same := func(what string, args ...string) {
		t.Helper()
		ucode, uerr, uout := runCLI(t, up, args...)
		ocode, oerr, oout := runCLI(t, ours, args...)
		if ucode != ocode || uout != oout || firstLines(uerr, 2) != firstLines(oerr, 2) || errorLine.FindString(uerr) != errorLine.FindString(oerr) {
			t.Errorf("%s: etcdctl %v\n--- upstream (exit %d) ---\n%s%s\n--- ours (exit %d) ---\n%s%s", what, args, ucode, uerr, uout, ocode, oerr, oout)
		}
	}
	for _, w := range []string{"simple", "json", "table", "fields"} {
		same("status", "snapshot", "status", snap, "-w", w)
	}
	same("status of no file", "snapshot", "status", filepath.Join(dir, "none"))
	same("restore to a name not in the cluster", "snapshot", "restore", snap, "--data-dir", filepath.Join(dir, "x"), "--name", "x")
	for i, bin := range []string{up, ours} {
		d := filepath.Join(dir, []string{"up", "ours"}[i])
		if code, errs, _ := runCLI(t, bin, "snapshot", "restore", snap, "--data-dir", d, "--name", "m1",
			"--initial-cluster", "m1=http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380"); code != 0 {
			t.Fatalf("%s restore: %s", bin, errs)
		}
		if code, errs, _ := runCLI(t, bin, "defrag", "--data-dir", d); code != 0 || !strings.HasPrefix(errs, "Use `etcdutl defrag` instead.") {
			t.Errorf("%s defrag --data-dir: exit %d %s", bin, code, errs)
		}
	}
	// Each restored data dir reads back the same through upstream's etcdutl: the keys of the
	// snapshot at its revision.
	utl := UpstreamBinaryAt(t, Upstream36Version, "etcdutl") // 3.5's has no hashkv
	_, _, a := runCLI(t, utl, "hashkv", filepath.Join(dir, "up", "member", "snap", "db"), "-w", "json")
	_, _, b := runCLI(t, utl, "hashkv", filepath.Join(dir, "ours", "member", "snap", "db"), "-w", "json")
	if a != b || a == "" {
		t.Errorf("hashkv of the restored data dirs: upstream's %q, ours %q", a, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "ours", "member", "wal")); err != nil {
		t.Errorf("our restore wrote no WAL: %v", err)
	}
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitAfterN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "")
}
