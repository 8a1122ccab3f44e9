package cli

import (
	"fmt"
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
