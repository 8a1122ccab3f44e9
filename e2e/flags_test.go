package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"etcdx/upgradelab/cluster"
)

func runEtcd(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	return runEtcdBin(t, Binary(t, "etcd"), env, args...)
}

// runEtcdBin runs an etcd binary that is expected to exit, with its output.
func runEtcdBin(t *testing.T, bin string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("etcd %v did not exit", args)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestBadFlagsAsUpstream runs bad command lines on upstream and ours of the same line (3.7, or the
// line a case names): the exit status
// is upstream's (2 when the flag parser rejects the line, 1 when verification fails) and the
// output names the problem. Where upstream starts anyway or panics, ours refuses with exit 1 or
// 2 naming the flag (docs/compatibility.md lists these), and upstream is not run.
func TestBadFlagsAsUpstream(t *testing.T) {
	dir := t.TempDir()
	const upstreamStarts = -1
	cases := []struct {
		env      []string
		args     []string
		upstream int // upstream's status, or upstreamStarts
		ours     int
		want     string
		at       string // the level, when not the current one
	}{
		{nil, []string{"--no-such-flag"}, 2, 2, "flag provided but not defined: -no-such-flag", ""},
		{nil, []string{"-snapshot-count", "many"}, 2, 2, `invalid value "many" for flag -snapshot-count`, ""},
		{nil, []string{"--initial-cluster-state", "sideways"}, 2, 2, "-initial-cluster-state", ""},
		{nil, []string{"--listen-client-urls", "ftp://127.0.0.1:1", "--advertise-client-urls", "http://127.0.0.1:1"}, 2, 2, "-listen-client-urls", ""},
		{nil, []string{"--feature-gates", "Foo=true"}, 2, 2, "unrecognized feature gate: Foo", ""},
		{nil, []string{"--heartbeat-interval", "300", "--election-timeout", "1000"}, 1, 1, "--election-timeout", ""},
		{[]string{"ETCD_SNAPSHOT_COUNT=lots"}, nil, 1, 1, "ETCD_SNAPSHOT_COUNT", ""},
		{[]string{"ETCD_NAME=x"}, []string{"--name", "y"}, 1, 1, "ETCD_NAME", ""},
		{nil, []string{"--config-file", filepath.Join(dir, "missing.yaml")}, 1, 1, "missing.yaml", ""},
		{nil, []string{"positional"}, 1, 1, `\"positional\" is not a valid flag`, ""},
		{nil, []string{"--listen-client-urls", "http://127.0.0.1:1"}, 1, 1, "--advertise-client-urls is required when --listen-client-urls is set explicitly", ""},
		{nil, []string{"--listen-client-urls", "https://127.0.0.1:1", "--advertise-client-urls", "https://127.0.0.1:1"}, 1, 1, "TLS key/cert (--cert-file, --key-file) must be provided for client url https://127.0.0.1:1 with HTTPS scheme", ""},
		{nil, []string{"--v2-deprecation=not-yet"}, 2, 2, `invalid value "not-yet" for flag -v2-deprecation: invalid value "not-yet"`, ""},
		{nil, []string{"--v2-deprecation=not-yet"}, 2, 2, `invalid value "not-yet" for flag -v2-deprecation: invalid value "not-yet"`, LastReleaseLevel},
		{nil, []string{"--experimental-snapshot-catchup-entries", "5", "--snapshot-catchup-entries", "6"}, 1, 1, "cannot set --experimental-snapshot-catchup-entries and --snapshot-catchup-entries at the same time", LastReleaseLevel},
		{nil, []string{"--experimental-initial-corrupt-check=false", "--feature-gates", "InitialCorruptCheck=false"}, 1, 1, "cannot specify both flags", LastReleaseLevel},
		// 3.7 removed the experimental spellings and added gates 3.6 does not know.
		{nil, []string{"--experimental-snapshot-catchup-entries", "5"}, 2, 2, "flag provided but not defined: -experimental-snapshot-catchup-entries", ""},
		{nil, []string{"--experimental-initial-corrupt-check"}, 2, 2, "flag provided but not defined: -experimental-initial-corrupt-check", ""},
		{nil, []string{"--feature-gates", "PriorityRequest=true"}, 2, 2, "unrecognized feature gate: PriorityRequest", LastReleaseLevel},
		// 3.7 removed v2 discovery: its --help still lists these, but they are not defined.
		{nil, []string{"--discovery", "http://127.0.0.1:9/token"}, 2, 2, "flag provided but not defined: -discovery", ""},
		{nil, []string{"--discovery-proxy", "http://127.0.0.1:9"}, 2, 2, "flag provided but not defined: -discovery-proxy", ""},
		// 3.5 has neither gates nor 3.6's names; it has the v2 API (served) and the v2 proxy (not).
		{nil, []string{"--feature-gates", "InitialCorruptCheck=true"}, 2, 2, "flag provided but not defined: -feature-gates", OldestLevel},
		{nil, []string{"--snapshot-catchup-entries", "5"}, 2, 2, "flag provided but not defined: -snapshot-catchup-entries", OldestLevel},
		{nil, []string{"--experimental-compaction-batch-limit", "x"}, 2, 2, `invalid value "x" for flag -experimental-compaction-batch-limit`, OldestLevel},
		{nil, []string{"--enable-v2", "--v2-deprecation=write-only"}, 1, 1, "--enable-v2 and --v2-deprecation=write-only are mutually exclusive", OldestLevel},
		{nil, []string{"--proxy", "on"}, upstreamStarts, 1, "--proxy=on: this server runs no v2 proxy", OldestLevel},
		// Upstream 3.5 then serves the v2 API emulated over v3; the flag alone only warns (both).
		{nil, []string{"--enable-v2", "--experimental-enable-v2v3", "/v2v3"}, upstreamStarts, 1, "--experimental-enable-v2v3 with --enable-v2: this server serves no v2 API emulated over v3", OldestLevel},
		{nil, []string{"--logger", "capnslog"}, 1, 1, "--logger=capnslog is removed in v3.5", ""},
		{nil, []string{"--log-format", "xml"}, 1, 1, "unknown log format: xml", ""},
		{nil, []string{"--log-outputs", "default,stdout"}, 1, 1, "multi logoutput", ""},
		{nil, []string{"--enable-log-rotation"}, 1, 1, "--log-outputs requires a single file path", ""},
		{nil, []string{"--tls-min-version", "TLS1.1"}, 1, 1, "unexpected TLS version", ""},
		{nil, []string{"--tls-min-version", "TLS1.3", "--tls-max-version", "TLS1.2"}, 1, 1, "min version (TLS1.3) is greater than max version (TLS1.2)", ""},
		{nil, []string{"--auth-token", "fancy"}, 1, 1, "auth: invalid auth options", ""},
		{nil, []string{"--discovery-fallback", "proxy"}, 1, 1, "v2 proxy is deprecated", ""},
		// Upstream panics here (exit 2); ours says which level it wants.
		{nil, []string{"--log-level", "loud"}, upstreamStarts, 1, "unknown log level", ""},
		// Upstream starts with these and ignores or misreads the setting.
		{nil, []string{"--auto-compaction-mode", "revision", "--auto-compaction-retention", "1h"}, upstreamStarts, 1, "--auto-compaction-retention", ""},
		{nil, []string{"--cert-file", "/nonexistent.crt"}, upstreamStarts, 1, "--cert-file and --key-file must be given together", ""},
		{nil, []string{"--cert-file", "/nonexistent.crt", "--key-file", "/nonexistent.key"}, upstreamStarts, 1, "--cert-file/--key-file", ""},
		{nil, []string{"--peer-client-cert-auth", "--peer-cert-file", "a", "--peer-key-file", "b"}, upstreamStarts, 1, "--peer-client-cert-auth requires --peer-trusted-ca-file", ""},
		{nil, []string{"--metrics", "loud"}, upstreamStarts, 2, "-metrics", ""},
		{nil, []string{"--backend-bbolt-freelist-type", "list"}, upstreamStarts, 2, "-backend-bbolt-freelist-type", ""},
	}
	for _, c := range cases {
		level := c.at
		if level == "" {
			level = CurrentLevel
		}
		up := UpstreamBinaryAt(t, "v"+ReleaseOf(level), "etcd")
		args := append([]string{"--data-dir", filepath.Join(dir, "d")}, c.args...)
		code, out := runEtcdBin(t, ServerAt(t, level), c.env, args...)
		if code != c.ours || !strings.Contains(out, c.want) {
			t.Errorf("etcd %v (env %v): exit %d, output %q; want exit %d naming %q", c.args, c.env, code, out, c.ours, c.want)
		}
		if c.upstream != upstreamStarts {
			uargs := append([]string{"--data-dir", filepath.Join(dir, "upstream")}, c.args...)
			if ucode, uout := runEtcdBin(t, up, c.env, uargs...); ucode != c.upstream {
				t.Errorf("upstream etcd %v (env %v): exit %d, want %d (test table out of date?)\n%s", c.args, c.env, ucode, c.upstream, uout)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); err == nil {
		t.Error("a rejected configuration created the data dir")
	}
}

// TestVersionFlag: at each level, `etcd --version` prints upstream's four lines with the upstream
// release that level implements (as that release's own binary prints it), then one line naming
// this implementation.
func TestVersionFlag(t *testing.T) {
	for _, level := range []string{CurrentLevel, LastReleaseLevel, OldestLevel} {
		out, err := exec.Command(ServerAt(t, level), "--version").Output()
		if err != nil {
			t.Fatalf("level %s --version: %v", level, err)
		}
		up, err := exec.Command(UpstreamBinaryAt(t, "v"+ReleaseOf(level), "etcd"), "--version").Output()
		if err != nil {
			t.Fatalf("upstream %s --version: %v", ReleaseOf(level), err)
		}
		ours, theirs := strings.Split(strings.TrimSpace(string(out)), "\n"), strings.Split(strings.TrimSpace(string(up)), "\n")
		if len(ours) != len(theirs)+1 || ours[0] != theirs[0] || !strings.HasPrefix(ours[len(ours)-1], "Implementation: etcdx ") {
			t.Fatalf("level %s --version:\n%s\nupstream %s:\n%s", level, out, ReleaseOf(level), up)
		}
		for i := range theirs {
			if key := theirs[i][:strings.Index(theirs[i], ":")+1]; !strings.HasPrefix(ours[i], key) {
				t.Errorf("level %s line %d is %q, upstream's %q", level, i+1, ours[i], theirs[i])
			}
		}
	}
}

func TestEnvironmentAndConfigFile(t *testing.T) {
	// Environment variables fill flags that were not given.
	m := NewMember(t)
	m.Env = []string{"ETCD_SNAPSHOT_COUNT=7"}
	m.Start()
	c := m.Client()
	for i := 0; i < 20; i++ {
		c.Put(Ctx(t), fmt.Sprint(i), "v")
	}
	if snaps, _ := filepath.Glob(filepath.Join(m.DataDir, "member", "snap", "*.snap")); len(snaps) == 0 {
		t.Fatal("ETCD_SNAPSHOT_COUNT=7 had no effect after 20 writes")
	}
	m.Stop()

	// A config file in upstream's YAML form replaces flags and environment.
	dir := t.TempDir()
	client := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	cfg := fmt.Sprintf(`name: from-file
data-dir: %s
listen-client-urls: %s
advertise-client-urls: %s
listen-peer-urls: %s
initial-advertise-peer-urls: %s
initial-cluster: from-file=%s
initial-cluster-token: file-token
snapshot-count: 5000
heartbeat-interval: 50
election-timeout: 500
auto-compaction-mode: revision
auto-compaction-retention: "1000"
enable-v2: false
`, filepath.Join(dir, "data"), client, client, peer, peer, peer)
	path := filepath.Join(dir, "etcd.yaml")
	os.WriteFile(path, []byte(cfg), 0o600)
	fm := &Member{t: t, Member: &cluster.Member{Name: "from-file", DataDir: filepath.Join(dir, "data"), ClientURL: client, PeerURL: peer, Bin: Binary(t, "etcd"),
		Flags: []string{"--config-file", path}}}
	t.Cleanup(fm.Kill)
	if err := fm.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	if err := fm.WaitHealthy(20 * time.Second); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "from-file.log"))
		t.Fatalf("config-file member: %v\n%s", err, b)
	}
	ml, err := fm.Client().MemberList(Ctx(t))
	if err != nil || ml.Members[0].Name != "from-file" {
		t.Fatalf("member from config file: %+v %v", ml, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "from-file.log"))
	if !strings.Contains(string(b), "enable-v2") {
		t.Fatal("an unimplemented config key was ignored silently")
	}
}
