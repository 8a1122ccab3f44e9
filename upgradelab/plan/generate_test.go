package plan

import (
	"reflect"
	"testing"
)

func gen(seed uint64) Generator {
	return Generator{Seed: seed, Members: 3, Path: []string{"3.5.35", "3.5.26", "3.6.16"},
		Levels:    map[string]string{"3.5.35": "3.5", "3.5.26": "3.5", "3.6.16": "3.6"},
		Faults:    FaultKinds,
		Downgrade: true, FaultRate: 0.7}
}

func TestSameSeedSamePlan(t *testing.T) {
	for seed := uint64(1); seed < 50; seed++ {
		a, err := gen(seed).Generate()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := gen(seed).Generate()
		if !reflect.DeepEqual(a, b) || a.Numbered() != b.Numbered() {
			t.Fatalf("seed %d gave two plans:\n%s\n%s", seed, a.Numbered(), b.Numbered())
		}
		if a.Seed != seed || a.Start != "3.5.35" {
			t.Fatalf("seed %d: plan %+v", seed, a)
		}
	}
	a, _ := gen(1).Generate()
	b, _ := gen(2).Generate()
	if a.Numbered()[20:] == b.Numbered()[20:] {
		t.Error("seeds 1 and 2 gave the same steps")
	}
}

// Over many seeds every step kind the generator can make appears, and every hop of the path
// and the downgrade's cancel and completion both occur.
func TestEveryStepKindOverManySeeds(t *testing.T) {
	seen := map[StepKind]int{}
	orders := map[string]int{}
	cancels, completions := 0, 0
	for seed := uint64(0); seed < 300; seed++ {
		p, err := gen(seed).Generate()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		hops := map[string]bool{}
		downgraded := false
		for _, s := range p.Steps {
			seen[s.Kind()]++
			if s.Replace != nil {
				hops[s.Replace.Version] = true
				orders[s.Replace.Order]++
				if downgraded && s.Replace.Version == "3.5.26" {
					completions++
				}
			}
			if s.Downgrade != nil && s.Downgrade.Action == "enable" {
				downgraded = true
			}
			if s.Downgrade != nil && s.Downgrade.Action == "cancel" {
				cancels++
			}
		}
		if !hops["3.5.26"] || !hops["3.6.16"] {
			t.Fatalf("seed %d skipped a hop:\n%s", seed, p.Numbered())
		}
	}
	for _, k := range Kinds {
		if k == KindRefuse || k == KindCrash || k == KindSnapshot {
			continue // written by hand: a refusal's text is the point; a crash needs a failpoint build; a snapshot step belongs to a route into 3.7
		}
		if seen[k] == 0 {
			t.Errorf("no plan over 300 seeds has a %s step", k)
		}
	}
	if cancels == 0 || completions == 0 || orders[OrderLeaderLast] == 0 || orders[""] == 0 {
		t.Errorf("cancels %d, completed downgrades %d, orders %v", cancels, completions, orders)
	}
}

func TestGeneratorRefusals(t *testing.T) {
	g := gen(1)
	g.Faults = []StepKind{KindExpect}
	if _, err := g.Generate(); err == nil {
		t.Error("expect accepted as a fault")
	}
	g = gen(1)
	g.Path = g.Path[:1]
	if _, err := g.Generate(); err == nil {
		t.Error("a path of one subject accepted")
	}
}
