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
	cmd := exec.Command(Binary(t, "etcd"), args...)
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

func TestBadFlagsExitTwoNamingTheFlag(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--no-such-flag"}, "--no-such-flag"},
		{nil, []string{"--snapshot-count", "many"}, "--snapshot-count"},
		{nil, []string{"--heartbeat-interval", "300", "--election-timeout", "1000"}, "--election-timeout"},
		{nil, []string{"--initial-cluster-state", "sideways"}, "--initial-cluster-state"},
		{nil, []string{"--listen-client-urls", "ftp://127.0.0.1:1"}, "--listen-client-urls"},
		{nil, []string{"--auto-compaction-mode", "revision", "--auto-compaction-retention", "1h"}, "--auto-compaction-retention"},
		{nil, []string{"--log-level", "loud"}, "--log-level"},
		{[]string{"ETCD_SNAPSHOT_COUNT=lots"}, nil, "ETCD_SNAPSHOT_COUNT"},
		{nil, []string{"--config-file", filepath.Join(dir, "missing.yaml")}, "--config-file"},
		{nil, []string{"positional"}, "'positional' is not a valid flag"},
		{nil, []string{"--listen-client-urls", "http://127.0.0.1:1"}, "--advertise-client-urls is required when --listen-client-urls is set explicitly"},
		{nil, []string{"--listen-client-urls", "https://127.0.0.1:1", "--advertise-client-urls", "https://127.0.0.1:1"}, "--cert-file and --key-file are not set"},
		{nil, []string{"--cert-file", "/nonexistent.crt"}, "--cert-file and --key-file must be given together"},
		{nil, []string{"--peer-client-cert-auth", "--peer-cert-file", "a", "--peer-key-file", "b"}, "--peer-client-cert-auth requires --peer-trusted-ca-file"},
		{nil, []string{"--cert-file", "/nonexistent.crt", "--key-file", "/nonexistent.key"}, "--cert-file/--key-file"},
	}
	for _, c := range cases {
		args := append([]string{"--data-dir", filepath.Join(dir, "d")}, c.args...)
		code, out := runEtcd(t, c.env, args...)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("etcd %v (env %v): exit %d, output %q; want exit 2 naming %q", c.args, c.env, code, out, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); err == nil {
		t.Error("a rejected configuration created the data dir")
	}
}

func TestVersionFlag(t *testing.T) {
	code, out := runEtcd(t, nil, "--version")
	if code != 0 || !strings.Contains(out, "etcd Version: 3.6.0") || !strings.Contains(out, "Go Version:") {
		t.Fatalf("--version: %d %q", code, out)
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
