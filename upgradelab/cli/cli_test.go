package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"etcdx/upgradelab/plan"
)

func TestShardsCoverEveryCellOnce(t *testing.T) {
	var runs []oneRun
	for i := 0; i < 7; i++ {
		runs = append(runs, oneRun{plan: &plan.Plan{Name: fmt.Sprint(i)}, members: 3})
	}
	seen := map[string]int{}
	for i := 1; i <= 3; i++ {
		for _, r := range shardOf(runs, i, 3) {
			seen[r.plan.Name]++
		}
	}
	for i := 0; i < 7; i++ {
		if seen[fmt.Sprint(i)] != 1 {
			t.Errorf("cell %d ran %d times over 3 shards", i, seen[fmt.Sprint(i)])
		}
	}
	if got := shardOf(runs, 2, 3); len(got) != 2 || got[0].plan.Name != "1" || got[1].plan.Name != "4" {
		t.Errorf("shard 2/3: %v", got)
	}
}

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"0/2", "3/2", "1/0", "a/b", "1/2/3", "1", " 1/2"} {
		if _, _, err := parseShard(bad); err == nil {
			t.Errorf("--shard %q accepted", bad)
		}
	}
	if i, n, err := parseShard("2/4"); err != nil || i != 2 || n != 4 {
		t.Errorf("2/4: %d %d %v", i, n, err)
	}
}

// TestHelpPrintedOnce: every command's --help prints its usage once, on stdout, and exits 0.
func TestHelpPrintedOnce(t *testing.T) {
	for _, cmd := range []string{"run", "plan", "assess", "guide", "clean"} {
		t.Run(cmd, func(t *testing.T) {
			var out, errs bytes.Buffer
			if code := Main([]string{cmd, "--help"}, &out, &errs); code != 0 {
				t.Fatalf("exit %d", code)
			}
			if errs.Len() != 0 {
				t.Errorf("stderr:\n%s", errs.String())
			}
			if n := strings.Count(out.String(), "Usage of upgradelab "+cmd+":"); n != 1 {
				t.Errorf("the usage %d times on stdout:\n%s", n, out.String())
			}
		})
	}
}
