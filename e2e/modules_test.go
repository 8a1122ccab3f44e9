package e2e

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The workspace's modules and what each may depend on: no module requires one that requires it
// back, the CLIs stay off the server's raft machinery, and pkg depends on nothing of ours.
// etcdctl reaches the storage code only through etcdutl's command tree (etcdutl/tool), which
// level 3.5's etcdctl runs for 3.5's offline commands, as upstream 3.5's etcdctl runs etcdutl's.
func TestModuleGraph(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	goBin := "go" // go test puts its own GOROOT/bin first on PATH
	list := func(dir string, format string) []string {
		t.Helper()
		cmd := exec.Command(goBin, "list", "-deps", "-f", format, "./...")
		cmd.Dir = filepath.Join(root, dir)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list in %s: %v", dir, err)
		}
		return strings.Fields(string(out))
	}
	modules := []string{"pkg", "server", "etcdctl", "etcdutl", "discovery", "upgradelab", "e2e"}
	uses := map[string]map[string]bool{}
	for _, m := range modules {
		uses["etcdx/"+m] = map[string]bool{}
		for _, dep := range list(m, "{{with .Module}}{{.Path}}{{end}}") {
			if strings.HasPrefix(dep, "etcdx/") && dep != "etcdx/"+m {
				uses["etcdx/"+m][dep] = true
			}
		}
	}
	// Kahn's algorithm: what cannot be ordered is on a cycle.
	remaining := map[string]map[string]bool{}
	for m, deps := range uses {
		remaining[m] = map[string]bool{}
		for d := range deps {
			remaining[m][d] = true
		}
	}
	for progress := true; progress; {
		progress = false
		for m, deps := range remaining {
			if len(deps) == 0 {
				delete(remaining, m)
				for _, o := range remaining {
					delete(o, m)
				}
				progress = true
			}
		}
	}
	if len(remaining) > 0 {
		var cyc []string
		for m := range remaining {
			cyc = append(cyc, m)
		}
		sort.Strings(cyc)
		t.Errorf("modules on a dependency cycle: %v", cyc)
	}
	for m, forbidden := range map[string][]string{
		"etcdx/pkg":     {"etcdx/server", "etcdx/etcdctl", "etcdx/etcdutl", "etcdx/discovery", "etcdx/upgradelab"},
		"etcdx/server":  {"etcdx/discovery", "etcdx/etcdctl", "etcdx/etcdutl", "etcdx/upgradelab"},
		"etcdx/etcdctl": {"etcdx/discovery", "etcdx/upgradelab"},
		"etcdx/etcdutl": {"etcdx/etcdctl"},
	} {
		for _, f := range forbidden {
			if uses[m][f] {
				t.Errorf("%s depends on %s", m, f)
			}
		}
	}
	// The CLIs work offline or as clients: they read and write files through schema and
	// membership, never through a member's raft server.
	for _, cli := range []string{"etcdutl", "etcdctl"} {
		for _, p := range list(cli, "{{.ImportPath}}") {
			switch p {
			case "etcdx/server/etcdserver", "etcdx/server/embed", "etcdx/server/transport", "etcdx/server/v3rpc":
				t.Errorf("%s depends on %s", cli, p)
			}
		}
	}
	// Of etcdutl, etcdctl uses the command tree alone.
	for _, p := range list("etcdctl", "{{.ImportPath}}") {
		if strings.HasPrefix(p, "etcdx/etcdutl") && p != "etcdx/etcdutl/tool" && p != "etcdx/etcdutl/offline" {
			t.Errorf("etcdctl depends on %s", p)
		}
	}
}
