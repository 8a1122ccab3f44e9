package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the golden plans: go test ./cli -run TestGoldenPlans -update.
var update = flag.Bool("update", false, "rewrite testdata/golden from the planner's output")

// goldenPlans are the planner's answers for fixed seeds and settings, as `upgradelab plan
// --dry-run` prints them (numbered steps). A change to the planner that moves any step shows up
// here, and the example in docs/upgradelab.md is the first of them.
var goldenPlans = []struct {
	name string
	args []string
}{
	{"seed-7-3.5-to-3.6", []string{"--from", "3.5", "--to", "3.6", "--seed", "7", "--faults", "kill,partition,freeze,add,compact,defrag"}},
	{"seed-42-3.5-to-3.6", []string{"--from", "3.5", "--to", "3.6", "--seed", "42", "--faults", "kill,freeze,add,compact,defrag"}},
	{"seed-11-3.6-to-3.7", []string{"--from", "3.6", "--to", "3.7", "--seed", "11", "--faults", "kill,freeze,add,compact,defrag"}},
	{"seed-3-via-patch-5-members", []string{"--from", "3.5", "--via", "3.5.35", "--to", "3.6", "--seed", "3", "--members", "5", "--faults", "kill,partition,add"}},
	{"seed-5-no-faults", []string{"--from", "3.6", "--to", "3.7", "--seed", "5"}},
}

func TestGoldenPlans(t *testing.T) {
	for _, g := range goldenPlans {
		t.Run(g.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := Main(append([]string{"plan", "--dry-run"}, g.args...), &out, &errOut); code != 0 {
				t.Fatalf("upgradelab plan --dry-run %v: exit %d\n%s", g.args, code, errOut.String())
			}
			numbered, _, ok := strings.Cut(out.String(), "\n\n")
			if !ok {
				t.Fatalf("no numbered steps in:\n%s", out.String())
			}
			got := "$ upgradelab plan --dry-run " + strings.Join(g.args, " ") + "\n" + numbered + "\n"
			path := filepath.Join("testdata", "golden", g.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("the planner's answer changed (if on purpose: go test ./cli -run TestGoldenPlans -update):\n--- %s\n%s--- now\n%s", path, want, got)
			}
		})
	}
}

// TestDocsExampleIsGolden: docs/upgradelab.md shows the first golden plan, as it is.
func TestDocsExampleIsGolden(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "golden", goldenPlans[0].name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "upgradelab.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, want) {
		t.Errorf("docs/upgradelab.md does not show the golden plan %s as it is:\n%s", goldenPlans[0].name, want)
	}
}
