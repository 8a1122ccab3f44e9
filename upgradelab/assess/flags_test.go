package assess

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadFlags(t *testing.T) {
	for _, tc := range []struct {
		file, source string
		want         map[string]string
		absent       []string
	}{
		{"kubeadm-etcd.yaml", SourceManifest, map[string]string{"name": "node1", "experimental-initial-corrupt-check": "true",
			"experimental-watch-progress-notify-interval": "5s", "client-cert-auth": "true", "snapshot-count": "10000"}, []string{"etcd", "image"}},
		{"default-etcd", SourceEnvFile, map[string]string{"name": "deb1", "data-dir": "/var/lib/etcd/default", "enable-v2": "true",
			"auto-compaction-retention": "1", "proxy": "off"}, []string{"daemon-args"}},
		{"etcd.conf.yml", SourceConfigFile, map[string]string{"name": "conf1", "experimental-compaction-batch-limit": "1000",
			"snapshot-count": "10000", "enable-v2": "false", "cert-file": "/etc/etcd/server.crt", "client-cert-auth": "true",
			"peer-cert-file": "/etc/etcd/peer.crt", "peer-trusted-ca-file": "/etc/etcd/ca.crt"}, []string{"client-transport-security"}},
		{"comments-only", SourceEnvFile, map[string]string{}, []string{"name"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			flags, source, err := ReadFlags(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if source != tc.source {
				t.Errorf("read as %s, want %s", source, tc.source)
			}
			for k, v := range tc.want {
				if flags[k] != v {
					t.Errorf("--%s = %q, want %q (all: %v)", k, flags[k], v, flags)
				}
			}
			for _, k := range tc.absent {
				if _, ok := flags[k]; ok {
					t.Errorf("--%s read, though it is no flag", k)
				}
			}
		})
	}
}

func TestReadFlagsRefusesWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"not-yaml": "name: [unclosed\n", "pod-without-etcd": "kind: Pod\nspec:\n  containers:\n  - name: other\n    command: [sleep]\n"} {
		p := filepath.Join(dir, name)
		writeFile(t, p, content)
		if _, _, err := ReadFlags(p); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
	if _, _, err := ReadFlags(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file was read")
	}
}

func TestAddFlagsAttachesByName(t *testing.T) {
	f := Facts{Members: []Member{{Name: "node1", Listed: true}, {Name: "node2", Listed: true}}}
	if err := AddFlags(&f, filepath.Join("testdata", "kubeadm-etcd.yaml")); err != nil {
		t.Fatal(err)
	}
	if f.Members[0].Flags["name"] != "node1" || f.Members[1].Flags != nil || len(f.Members) != 2 {
		t.Fatalf("flags attached to the wrong member: %+v", f.Members)
	}
	if err := AddFlags(&f, filepath.Join("testdata", "etcd.conf.yml")); err != nil {
		t.Fatal(err)
	}
	if len(f.Members) != 3 || f.Members[2].Name != "conf1" || f.Members[2].Listed {
		t.Fatalf("a config of a member the cluster does not list: %+v", f.Members[2])
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
