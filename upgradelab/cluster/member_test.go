package cluster

import (
	"path/filepath"
	"strings"
	"testing"
)

// The command line a member starts with: upstream's flag names, a one-member cluster by default.
func TestArgs(t *testing.T) {
	m := &Member{Name: "m1", DataDir: "/d/data", ClientURL: "http://127.0.0.1:1", PeerURL: "http://127.0.0.1:2"}
	want := "--name m1 --data-dir /d/data --listen-client-urls http://127.0.0.1:1 --advertise-client-urls http://127.0.0.1:1 " +
		"--listen-peer-urls http://127.0.0.1:2 --initial-advertise-peer-urls http://127.0.0.1:2 --initial-cluster m1=http://127.0.0.1:2 --log-level info"
	if got := strings.Join(m.Args(), " "); got != want {
		t.Errorf("defaults:\n got %s\nwant %s", got, want)
	}
	m.Token, m.State, m.MetricsURL, m.LogLevel, m.Extra = "tok", "existing", "http://127.0.0.1:3", "error", []string{"--snapshot-count", "5"}
	if got := strings.Join(m.Args(), " "); !strings.HasSuffix(got, "--initial-cluster m1=http://127.0.0.1:2 --initial-cluster-token tok --initial-cluster-state existing --listen-metrics-urls http://127.0.0.1:3 --log-level error --snapshot-count 5") {
		t.Errorf("every field: %s", got)
	}
	m.Discovery = []string{"--discovery-endpoints", "http://x:1", "--discovery-token", "t"}
	if got := strings.Join(m.Args(), " "); strings.Contains(got, "--initial-cluster ") || !strings.Contains(got, "--discovery-token t") {
		t.Errorf("discovery replaces --initial-cluster: %s", got)
	}
	m.Flags = []string{"--config-file", "/etc/etcd.yaml"}
	if got := strings.Join(m.Args(), " "); got != "--config-file /etc/etcd.yaml" {
		t.Errorf("Flags is the whole command line: %s", got)
	}
	if m.logPath() != "/d/m1.log" {
		t.Errorf("default log %s", m.logPath())
	}
}

func TestNewBootstrapsOneCluster(t *testing.T) {
	dir := t.TempDir()
	c, err := New(dir, 3, "tok")
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]bool{}
	for i, m := range c.Members {
		if m.Name != []string{"m1", "m2", "m3"}[i] || m.DataDir != filepath.Join(dir, m.Name, "data") || m.Token != "tok" || m.State != "new" {
			t.Errorf("member %+v", m)
		}
		if m.InitialCluster != c.Members[0].InitialCluster || !strings.Contains(m.InitialCluster, m.Name+"="+m.PeerURL) {
			t.Errorf("%s bootstraps %s", m.Name, m.InitialCluster)
		}
		ports[m.ClientURL], ports[m.PeerURL] = true, true
		if m.Running() || m.Exited() != nil {
			t.Errorf("%s runs before Start", m.Name)
		}
	}
	if len(ports) != 6 || c.Member("m2") != c.Members[1] || c.Member("m9") != nil || len(c.Endpoints()) != 3 {
		t.Errorf("ports %v", ports)
	}
	if p, err := FreePort(); err != nil || p < portLow || p >= portHigh {
		t.Errorf("FreePort = %d, %v: want a port below the ephemeral range", p, err)
	}
}
