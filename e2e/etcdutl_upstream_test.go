package e2e

import (
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// stoppedMemberFiles gives a stopped member's data dir (written by ours at level) and a
// snapshot of it.
func stoppedMemberFiles(t *testing.T, level string) (dataDir, snap string) {
	t.Helper()
	m := NewMember(t)
	m.Bin = ServerAt(t, level)
	m.Start()
	writeN(t, m.Client(), "u", 30)
	snap = saveSnapshot(t, m.Client())
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	return m.DataDir, snap
}

// cliAnswer is a command line's exit status and standard output.
func cliAnswer(t *testing.T, bin string, args ...string) string {
	t.Helper()
	code, _, out := runCLI(t, bin, args...)
	return fmt.Sprintf("exit %d: %s", code, out)
}

// TestEtcdutlAsUpstream runs upstream etcdutl 3.7.3 and ours on files ours wrote at 3.7: the same
// help for every command, the same answers with the global flags before the command and after it,
// every output format, and the same refusals. Each command runs on a copy of the files.
func TestEtcdutlAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	up, ours := UpstreamBinary(t, "etcdutl"), Binary(t, "etcdutl")
	for _, args := range [][]string{
		{"--help"}, {"defrag", "--help"}, {"snapshot", "--help"}, {"snapshot", "status", "--help"},
		{"snapshot", "restore", "--help"}, {"hashkv", "--help"}, {"migrate", "--help"}, {"version", "--help"},
		{"completion", "--help"}, {"help", "migrate"},
	} {
		if u, o := cliAnswer(t, up, args...), cliAnswer(t, ours, args...); u != o {
			t.Errorf("etcdutl %s:\n--- upstream ---\n%s\n--- ours ---\n%s", strings.Join(args, " "), u, o)
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if code, _, out := runCLI(t, ours, "completion", shell); code != 0 || !strings.Contains(out, "etcdutl") {
			t.Errorf("completion %s: exit %d\n%.300s", shell, code, out)
		}
	}

	dataDir, snap := stoppedMemberFiles(t, CurrentLevel)
	db := filepath.Join(dataDir, "member", "snap", "db")
	for _, args := range [][]string{
		{"-w", "json", "snapshot", "status", snap}, {"snapshot", "status", snap, "-w", "json"},
		{"--write-out=table", "snapshot", "status", snap}, {"snapshot", "status", "--write-out", "fields", snap},
		{"snapshot", "status", snap, "-w", "protobuf"}, {"snapshot", "status", snap, "-w", "simple"},
		{"-w", "json", "hashkv", db}, {"hashkv", db, "-w", "fields"}, {"hashkv", "--rev", "5", db, "-w", "table"},
		{"--timeout", "5s", "defrag", "--data-dir", "DIR"}, {"defrag", "--data-dir", "DIR", "--timeout=5s"},
		{"-w", "json", "defrag", "--data-dir", "DIR"},
		{"snapshot", "status"}, {"snapshot", "status", snap, "extra"}, {"hashkv"},
		{"migrate", "--data-dir", "DIR", "--target-version", "3.4"},
		{"sn", "st", snap, "-w", "json"},
	} {
		answer := func(bin string) string {
			dir := filepath.Join(t.TempDir(), "data")
			if out, err := exec.Command("cp", "-a", dataDir, dir).CombinedOutput(); err != nil {
				t.Fatalf("copy the data dir: %v\n%s", err, out)
			}
			a := append([]string(nil), args...)
			for i := range a {
				a[i] = strings.ReplaceAll(a[i], "DIR", dir)
			}
			return strings.ReplaceAll(cliAnswer(t, bin, a...), dir, "DIR")
		}
		if u, o := answer(up), answer(ours); u != o {
			t.Errorf("etcdutl %s:\n--- upstream ---\n%s\n--- ours ---\n%s", strings.Join(args, " "), u, o)
		}
	}

	// Migrating: the same exit status before and after the command's flags, and a data dir
	// either can serve afterwards (both log what they did: TestEtcdutlLogEventsAsUpstream).
	for _, bin := range []string{up, ours} {
		for _, args := range [][]string{{"--timeout=5s", "migrate", "--data-dir", "DIR", "--target-version", "3.6"}, {"migrate", "--data-dir", "DIR", "--target-version", "3.6", "-w", "json"}} {
			dir := filepath.Join(t.TempDir(), "data")
			if out, err := exec.Command("cp", "-a", dataDir, dir).CombinedOutput(); err != nil {
				t.Fatalf("copy: %v\n%s", err, out)
			}
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], "DIR", dir)
			}
			if code, errOut, _ := runCLI(t, bin, args...); code != 0 {
				t.Errorf("%s %v: exit %d\n%s", bin, args, code, errOut)
			}
			st := cliAnswer(t, up, "snapshot", "status", filepath.Join(dir, "member", "snap", "db"), "--write-out", "fields")
			if !strings.Contains(st, `"Version" : 3.6.0`) {
				t.Errorf("%s %v left %s", bin, args, st)
			}
		}
	}
}

// TestEtcdutlCheckV2StoreAsUpstream35: ours runs upstream 3.5.35's "check v2store" (what keeps a
// 3.5 member from moving to 3.6) with its answer, on a data dir upstream 3.5.35 wrote and on one
// ours wrote at 3.5.
func TestEtcdutlCheckV2StoreAsUpstream35(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	up := UpstreamBinaryAt(t, Upstream35Version, "etcdutl")
	upDir := NewMember(t)
	upDir.Bin = UpstreamBinaryAt(t, Upstream35Version, "etcd")
	upDir.Start()
	writeN(t, upDir.Client(), "k", 10)
	if err := upDir.Stop(); err != nil {
		t.Fatal(err)
	}
	oursDir, _ := stoppedMemberFiles(t, OldestLevel)
	for _, dir := range []string{upDir.DataDir, oursDir} {
		for _, args := range [][]string{{"check", "v2store", "--data-dir", dir}, {"check", "v2store"}} {
			u, o := cliAnswer(t, up, args...), cliAnswer(t, Binary(t, "etcdutl"), args...)
			if u != o {
				t.Errorf("etcdutl %v:\n--- upstream 3.5.35 ---\n%s\n--- ours ---\n%s", args, u, o)
			}
		}
	}
	if out := cliAnswer(t, Binary(t, "etcdutl"), "check", "v2store", "--data-dir", oursDir); !strings.Contains(out, "exit 0: No custom content found in both v2store and WAL records.") {
		t.Errorf("check v2store: %s", out)
	}
}

// TestEtcdutlWaitsForTheLock: right after a member is asked to stop, etcdutl waits for it to let
// go of its database (--timeout, 3.7) instead of failing; with a short timeout on a running member
// it gives up, saying what holds the file.
func TestEtcdutlWaitsForTheLock(t *testing.T) {
	m := NewMember(t)
	m.Start()
	writeN(t, m.Client(), "w", 10)
	code, out := etcdutl(t, "defrag", "--data-dir", m.DataDir, "--timeout", "300ms")
	if code != 1 || !strings.Contains(out, "in use by a running etcd") || !strings.Contains(out, "waited 300ms") {
		t.Fatalf("defrag of a running member's data: exit %d\n%s", code, out)
	}
	cmd := exec.Command(Binary(t, "etcdutl"), "--timeout", "30s", "defrag", "--data-dir", m.DataDir)
	done := make(chan error, 1)
	var outBuf strings.Builder
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	time.Sleep(time.Second) // etcdutl is waiting for the lock now
	select {
	case err := <-done:
		t.Fatalf("defrag ended while the member ran: %v\n%s", err, outBuf.String())
	default:
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("defrag after the member stopped: %v\n%s", err, outBuf.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("defrag still waiting 20 s after the member stopped")
	}
	m.Start()
	if countPrefix(t, m, "w") != 10 {
		t.Fatal("keys missing after the defrag")
	}
}

// TestEtcdutlHelpAsUpstream: `etcdutl <command> --help` of ours at each level prints what
// upstream's etcdutl of that line prints, byte for byte, with the same exit status, except for
// the commands ours keeps where upstream's line has none (hidden from the root help, which is
// compared): backup and check from 3.6, hashkv, migrate and completion at 3.5. At 3.5 ours' check
// also runs on its own (`check --data-dir`, hidden flag), so its usage has one line more.
func TestEtcdutlHelpAsUpstream(t *testing.T) {
	paths := []string{"", "defrag", "snapshot", "snapshot status", "snapshot restore", "snapshot save", "hashkv", "migrate",
		"version", "completion", "backup", "check", "check v2store", "help defrag"}
	oursOnly := map[string][]string{
		OldestLevel:      {"hashkv", "migrate", "completion"},
		LastReleaseLevel: {"backup", "check", "check v2store"},
		CurrentLevel:     {"backup", "check", "check v2store"},
	}
	for _, c := range []struct{ level, upstream string }{{OldestLevel, Upstream35Version}, {LastReleaseLevel, Upstream36Version}, {CurrentLevel, Upstream37Version}} {
		ours, up := ToolAt(t, c.level, "etcdutl"), UpstreamBinaryAt(t, c.upstream, "etcdutl")
		for _, p := range paths {
			if slices.Contains(oursOnly[c.level], p) {
				continue
			}
			args := append(strings.Fields(p), "--help")
			ucode, uerr, uout := runCLI(t, up, args...)
			ocode, oerr, oout := runCLI(t, ours, args...)
			if c.level == OldestLevel && p == "check" {
				oout = strings.Replace(oout, "  etcdutl check [flags]\n", "", 1)
			}
			if ucode != ocode || uerr != oerr || uout != oout {
				t.Errorf("level %s: etcdutl %s\n--- upstream %s (exit %d) ---\n%s%s\n--- ours (exit %d) ---\n%s%s", c.level, strings.Join(args, " "),
					c.upstream, ucode, uerr, uout, ocode, oerr, oout)
			}
		}
	}
	// 3.5's deprecated snapshot save says where snapshots come from now.
	ucode, uerr, _ := runCLI(t, UpstreamBinaryAt(t, Upstream35Version, "etcdutl"), "snapshot", "save", "x")
	ocode, oerr, _ := runCLI(t, ToolAt(t, OldestLevel, "etcdutl"), "snapshot", "save", "x")
	if ucode != ocode || uerr != oerr {
		t.Errorf("level 3.5: etcdutl snapshot save: upstream (exit %d) %q, ours (exit %d) %q", ucode, uerr, ocode, oerr)
	}
}

// TestEtcdutlAtOlderLevelsAsUpstream: ours at 3.6 and 3.5 against upstream's etcdutl of the same
// line on files ours wrote at that level: snapshot status in every format (3.5's counts every
// bucket's keys and has no version), with the global flag before or after the command, hashkv
// (from 3.6), and the refusals, down to the error line.
func TestEtcdutlAtOlderLevelsAsUpstream(t *testing.T) {
	for _, c := range []struct{ level, upstream string }{{OldestLevel, Upstream35Version}, {LastReleaseLevel, Upstream36Version}} {
		ours, up := ToolAt(t, c.level, "etcdutl"), UpstreamBinaryAt(t, c.upstream, "etcdutl")
		dataDir, snap := stoppedMemberFiles(t, c.level)
		db := filepath.Join(dataDir, "member", "snap", "db")
		lines := [][]string{
			{"-w", "json", "snapshot", "status", snap}, {"snapshot", "status", snap, "-w", "table"},
			{"snapshot", "status", snap, "--write-out=fields"}, {"snapshot", "status", snap}, {"snapshot", "status", snap, "-w", "protobuf"},
			{"snapshot", "status"}, {"snapshot", "status", filepath.Join(dataDir, "none")}, {"snapshot", "restore"},
			{"snapshot", "restore", snap, "--data-dir", filepath.Join(t.TempDir(), "r"), "--name", "x"},
			{"defrag"}, {"bogus"},
		}
		if c.level == OldestLevel {
			// 3.5 wants --data-dir (later lines restore into ./default.etcd without it).
			lines = append(lines, []string{"snapshot", "restore", snap})
		}
		if c.level != OldestLevel {
			lines = append(lines, []string{"-w", "json", "hashkv", db}, []string{"hashkv", db, "-w", "table"}, []string{"hashkv"},
				[]string{"migrate", "--data-dir", dataDir, "--target-version", "3.4"})
		}
		for _, args := range lines {
			ucode, uerr, uout := runCLI(t, up, args...)
			ocode, oerr, oout := runCLI(t, ours, args...)
			if ucode != ocode || uout != oout || errorLine.FindString(uerr) != errorLine.FindString(oerr) {
				t.Errorf("level %s: etcdutl %v\n--- upstream %s (exit %d) ---\n%s%s\n--- ours (exit %d) ---\n%s%s", c.level, args,
					c.upstream, ucode, uerr, uout, ocode, oerr, oout)
			}
		}
	}
}

// toolEvents are the level and message of each line of etcdutl's console log, without bbolt's
// own lines (the database library's, which ours does not use the same way).
func toolEvents(stderr string) []string {
	var evs []string
	for _, l := range strings.Split(stderr, "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 4 || f[2] == "bbolt" {
			continue
		}
		evs = append(evs, f[1]+" "+f[3])
	}
	return evs
}

// TestEtcdutlLogEventsAsUpstream: defrag, snapshot restore and migrate of ours print nothing on
// standard output and log, on standard error, every event upstream etcdutl 3.7.3 logs for the
// same command, in the same order, in its console form (scripts and upstream's e2e tests wait
// for "finished defragmenting directory" and "added member"); ours may log more between them.
func TestEtcdutlLogEventsAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	up, ours := UpstreamBinary(t, "etcdutl"), Binary(t, "etcdutl")
	dataDir, snap := stoppedMemberFiles(t, CurrentLevel)
	for _, args := range [][]string{
		{"defrag", "--data-dir", "DIR"},
		{"snapshot", "restore", snap, "--data-dir", "NEW", "--name", "m1", "--initial-cluster", "m1=http://127.0.0.1:2380,m2=http://127.0.0.1:2381",
			"--initial-advertise-peer-urls", "http://127.0.0.1:2380"},
		{"migrate", "--data-dir", "DIR", "--target-version", "3.6"},
		{"migrate", "--data-dir", "DIR", "--target-version", "3.7"},
		// a version neither knows, forced: written as asked (upstream's TestEtctlutlMigrate)
		{"migrate", "--data-dir", "DIR", "--target-version", "3.8", "--force"},
	} {
		run := func(bin string) (string, []string) {
			dir := filepath.Join(t.TempDir(), "data")
			if out, err := exec.Command("cp", "-a", dataDir, dir).CombinedOutput(); err != nil {
				t.Fatalf("copy the data dir: %v\n%s", err, out)
			}
			a := append([]string(nil), args...)
			for i := range a {
				a[i] = strings.ReplaceAll(strings.ReplaceAll(a[i], "DIR", dir), "NEW", filepath.Join(t.TempDir(), "new"))
			}
			code, stderr, stdout := runCLI(t, bin, a...)
			if args[0] == "migrate" && args[len(args)-1] == "3.7" {
				// Up again after going down: the second command is the one compared.
				runCLI(t, bin, "migrate", "--data-dir", dir, "--target-version", "3.6")
				code, stderr, stdout = runCLI(t, bin, a...)
			}
			return fmt.Sprintf("exit %d, stdout %q", code, stdout), toolEvents(stderr)
		}
		uRes, uEvs := run(up)
		oRes, oEvs := run(ours)
		if uRes != oRes {
			t.Errorf("etcdutl %v: upstream %s, ours %s", args, uRes, oRes)
		}
		if len(uEvs) == 0 {
			t.Fatalf("etcdutl %v: upstream logged nothing", args)
		}
		next := 0
		for _, e := range oEvs {
			if next < len(uEvs) && e == uEvs[next] {
				next++
			}
		}
		if next < len(uEvs) {
			t.Errorf("etcdutl %v: ours lacks upstream's %q (and what follows)\n--- upstream ---\n%s\n--- ours ---\n%s",
				args, uEvs[next], strings.Join(uEvs, "\n"), strings.Join(oEvs, "\n"))
		}
	}
}

// TestSnapshotRestoreFilesAsUpstream: etcdutl snapshot restore of ours leaves the files
// upstream 3.7.3's leaves (the WAL, the database and a raft snapshot of the new membership,
// which upstream's tests load), and each binary serves what the other restored.
func TestSnapshotRestoreFilesAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	upEtcd, upUtl := UpstreamBinaryAt(t, Upstream37Version, "etcd"), UpstreamBinaryAt(t, Upstream37Version, "etcdutl")
	_, snap := stoppedMemberFiles(t, CurrentLevel)
	files := func(dir string) []string {
		var out []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, rel)
			}
			return nil
		})
		return out
	}
	restored := map[string]*Member{}
	for side, utl := range map[string]string{"upstream": upUtl, "ours": Binary(t, "etcdutl")} {
		m := NewMember(t)
		if code, _, out := runCLI(t, utl, "snapshot", "restore", snap, "--data-dir", m.DataDir, "--name", m.Name,
			"--initial-cluster", m.Name+"="+m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL); code != 0 {
			t.Fatalf("%s restore: exit %d %s", side, code, out)
		}
		restored[side] = m
	}
	if u, o := files(restored["upstream"].DataDir), files(restored["ours"].DataDir); !slices.Equal(u, o) {
		t.Fatalf("restored files differ:\nupstream %v\nours     %v", u, o)
	}
	restored["ours"].Bin, restored["upstream"].Bin = upEtcd, ServerAt(t, CurrentLevel)
	var dumps []string
	for _, side := range []string{"ours", "upstream"} {
		m := restored[side]
		m.Start()
		dumps = append(dumps, dump(t, m.Client()))
		m.Stop()
	}
	if dumps[0] != dumps[1] {
		t.Fatalf("upstream serving our restore and ours serving upstream's differ:\n%s\n%s", dumps[0], dumps[1])
	}
}
