package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"etcdx/upgradelab/cluster"
)

// TestConfigFileAsUpstream starts upstream and ours of each of 3.6 and 3.7 on the same kind of
// YAML config file, written as upstream documents it (durations in nanoseconds, lists as YAML
// lists, nested sections; at 3.6 the deprecated experimental- keys, which 3.7 no longer has), and
// checks both took the settings.
func TestConfigFileAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	keys36 := "experimental-watch-progress-notify-interval: 2000000000\nexperimental-snapshot-catch-up-entries: 100"
	keys37 := "watch-progress-notify-interval: 2000000000\nsnapshot-catchup-entries: 100"
	for _, c := range []struct{ bin, keys string }{
		{UpstreamBinaryAt(t, Upstream36Version, "etcd"), keys36}, {ServerAt(t, LastReleaseLevel), keys36},
		{UpstreamBinaryAt(t, Upstream37Version, "etcd"), keys37}, {ServerAt(t, CurrentLevel), keys37},
	} {
		bin := c.bin
		dir := t.TempDir()
		client := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
		peer := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
		metrics := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
		logFile := filepath.Join(dir, "etcd.log")
		cfg := fmt.Sprintf(`name: cf
data-dir: %[1]s
listen-client-urls: %[2]s
advertise-client-urls: %[2]s
listen-peer-urls: %[3]s
initial-advertise-peer-urls: %[3]s
listen-metrics-urls: %[4]s
initial-cluster: cf=%[3]s
initial-cluster-state: new
snapshot-count: 5000
heartbeat-interval: 50
election-timeout: 500
%[6]s
log-outputs: [%[5]s]
log-level: info
max-wals: 3
enable-pprof: true
cors: "*"
auto-compaction-mode: revision
auto-compaction-retention: "1000"
feature-gates: StopGRPCServiceOnDefrag=true
socket-options:
  reuse-port: true
client-transport-security:
  client-cert-auth: false
`, filepath.Join(dir, "data"), client, peer, metrics, logFile, c.keys)
		path := filepath.Join(dir, "etcd.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		m := &Member{t: t, Member: &cluster.Member{Name: "cf", DataDir: filepath.Join(dir, "data"), ClientURL: client, PeerURL: peer,
			MetricsURL: metrics, Bin: bin, Flags: []string{"--config-file", path}}}
		t.Cleanup(m.Kill)
		if err := m.StartNoWait(); err != nil {
			t.Fatal(err)
		}
		if err := m.WaitHealthy(20 * time.Second); err != nil {
			t.Fatalf("%s with a config file: %v\n%s", bin, err, m.LogTail(20))
		}
		if _, err := m.Client().Defragment(Ctx(t), client); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(client + "/debug/pprof/")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: enable-pprof from the file: %v %v", bin, resp, err)
		}
		resp.Body.Close()
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatalf("%s: log-outputs from the file: %v", bin, err)
		}
		log := string(b)
		for _, want := range []string{`"msg":"ready to serve client requests"`, `"reason":"defrag is active"`} {
			if !strings.Contains(log, want) {
				t.Fatalf("%s: no %s in the log file", bin, want)
			}
		}
		if strings.Contains(log, "ignoring config file keys") {
			t.Fatalf("%s ignored upstream keys: %s", bin, log)
		}
	}
}
