package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"etcdx/upgradelab/cluster"
)

// kubeadmFlags is the command line kubeadm writes into etcd's static-pod manifest
// (docs/kubeadm.md), with this test's addresses, ports and certificates; gates is kubeadm's
// corruption-check setting, which differs between its etcd 3.5 and 3.6 manifests.
func kubeadmFlags(name, dataDir, client, peer, metrics string, certs Certs, gates []string) []string {
	flags := []string{
		"--advertise-client-urls=" + client,
		"--cert-file=" + certs.ServerCert,
		"--client-cert-auth=true",
		"--data-dir=" + dataDir,
	}
	flags = append(flags, gates...)
	return append(flags,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster="+name+"="+peer,
		"--key-file="+certs.ServerKey,
		"--listen-client-urls="+client,
		"--listen-metrics-urls="+metrics,
		"--listen-peer-urls="+peer,
		"--name="+name,
		"--peer-cert-file="+certs.ServerCert,
		"--peer-client-cert-auth=true",
		"--peer-key-file="+certs.ServerKey,
		"--peer-trusted-ca-file="+certs.CA,
		"--snapshot-count=10000",
		"--trusted-ca-file="+certs.CA,
	)
}

// TestKubeadmStaticPodCommandLine starts our member with kubeadm's etcd command lines, as a
// static pod would, probes it as kubelet does (/livez and /readyz on the metrics URL), and
// serves a client with a certificate; then restarts it, which runs the initial corruption check.
func TestKubeadmStaticPodCommandLine(t *testing.T) {
	certs := NewCerts(t)
	for _, v := range []struct {
		name  string
		gates []string
		level string // the 3.5 manifest's experimental flags are gone at 3.7, as upstream's
	}{
		{"etcd-3.5-manifest", []string{"--experimental-initial-corrupt-check=true", "--experimental-watch-progress-notify-interval=5s"}, LastReleaseLevel},
		{"etcd-3.6-manifest", []string{"--feature-gates=InitialCorruptCheck=true", "--watch-progress-notify-interval=5s"}, CurrentLevel},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			client := fmt.Sprintf("https://127.0.0.1:%d", FreePort(t))
			peer := fmt.Sprintf("https://127.0.0.1:%d", FreePort(t))
			metrics := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
			m := &Member{t: t, Member: &cluster.Member{Name: "node1", DataDir: filepath.Join(dir, "etcd"), ClientURL: client,
				PeerURL: peer, MetricsURL: metrics, Bin: ServerAt(t, v.level), TLS: certs.ClientTLS(t, true),
				Flags: kubeadmFlags("node1", filepath.Join(dir, "etcd"), client, peer, metrics, certs, v.gates)}}
			t.Cleanup(m.Kill)
			for run := 0; run < 2; run++ {
				if err := m.StartNoWait(); err != nil {
					t.Fatal(err)
				}
				for _, probe := range []string{"/livez", "/readyz"} {
					ok := false
					for i := 0; i < 100 && !ok; i++ {
						resp, err := http.Get(metrics + probe)
						if err == nil {
							ok = resp.StatusCode == http.StatusOK
							resp.Body.Close()
						}
						if !ok {
							time.Sleep(100 * time.Millisecond)
						}
					}
					if !ok {
						t.Fatalf("kubelet's %s probe never passed:\n%s", probe, m.LogTail(20))
					}
				}
				if _, err := m.Client().Put(Ctx(t), "/registry/pods/default/p", "v"); err != nil {
					t.Fatal(err)
				}
				if err := m.Stop(); err != nil {
					t.Fatal(err)
				}
			}
			if !strings.Contains(m.Log(), "initial corruption checking passed; no corruption") {
				t.Fatalf("the restart did not run the corruption check:\n%s", m.LogTail(30))
			}
		})
	}
}
