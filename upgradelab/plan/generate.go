package plan

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Generator builds a random plan from a seed: the same seed and settings give the same plan.
type Generator struct {
	Seed    uint64
	Members int
	// Path is the subjects the cluster goes through: the first is where it starts, each next
	// one a hop of a rolling replace (patch hops included, e.g. 3.5.17, 3.5.26, 3.6.16).
	Path []string
	// Levels maps subjects to their major.minor, where known: expectations are generated
	// only for subjects with a level.
	Levels map[string]string
	// Faults are the step kinds that may be injected between member replacements: kill,
	// partition, freeze, add, remove (an added learner, promoted and removed again), compact,
	// defrag.
	Faults []StepKind
	// Downgrade, when the last hop goes up one minor level, adds a downgrade back after it:
	// enabled, then cancelled or completed by replacing members back.
	Downgrade bool
	// FaultRate is the chance (0..1) of a fault after each member's replacement.
	FaultRate float64
}

// FaultKinds are the kinds a Generator may inject.
var FaultKinds = []StepKind{KindKill, KindPartition, KindFreeze, KindAdd, KindCompact, KindDefrag}

// Generate builds the plan.
func (g Generator) Generate() (*Plan, error) {
	if len(g.Path) < 2 {
		return nil, errors.New("generate: the path needs a start and at least one subject to move to")
	}
	if g.Members < 1 {
		return nil, errors.New("generate: members must be at least 1")
	}
	allowed := map[StepKind]bool{}
	for _, f := range g.Faults {
		ok := false
		for _, k := range FaultKinds {
			ok = ok || k == f
		}
		if !ok {
			return nil, fmt.Errorf("generate: %q is not a fault the generator injects (%v)", f, FaultKinds)
		}
		allowed[f] = true
	}
	rng := rand.New(rand.NewPCG(g.Seed, g.Seed^0x9e3779b97f4a7c15))
	p := &Plan{Name: fmt.Sprintf("random-%d", g.Seed), Members: g.Members, Start: g.Path[0], Seed: g.Seed,
		Description: fmt.Sprintf("generated from seed %d: %v with faults %v", g.Seed, g.Path, g.Faults)}
	b := &builder{g: g, rng: rng, p: p, allowed: allowed, next: g.Members + 1}
	for i := 1; i <= g.Members; i++ {
		b.members = append(b.members, fmt.Sprintf("m%d", i))
	}
	b.expectAt(g.Path[0])
	for _, to := range g.Path[1:] {
		b.hop(to)
	}
	last, prev := g.Path[len(g.Path)-1], g.Path[len(g.Path)-2]
	if lt, lp := g.Levels[last], g.Levels[prev]; g.Downgrade && lt != "" && lp != "" && oneMinorUp(lp, lt) {
		b.downgrade(prev, lp, lt)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("generate: built an invalid plan (a bug): %w", err)
	}
	return p, nil
}

// oneMinorUp says whether level b is a's next minor level (3.5 -> 3.6).
func oneMinorUp(a, b string) bool {
	var a1, a2, b1, b2 int
	if _, err := fmt.Sscanf(a, "%d.%d", &a1, &a2); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(b, "%d.%d", &b1, &b2); err != nil {
		return false
	}
	return a1 == b1 && b2 == a2+1
}

type builder struct {
	g       Generator
	rng     *rand.Rand
	p       *Plan
	allowed map[StepKind]bool
	members []string
	next    int
}

func (b *builder) add(s Step) { b.p.Steps = append(b.p.Steps, s) }

func (b *builder) wait() {
	b.add(Step{Wait: Duration(time.Duration(1+b.rng.IntN(3)) * time.Second)})
}

// expectAt expects every member to run subject's level, when it has one.
func (b *builder) expectAt(subject string) {
	if l := b.g.Levels[subject]; l != "" {
		b.add(Step{Expect: &Expect{Server: l, Cluster: l}})
	}
}

// hop replaces every member with subject, one at a time in a random order, leader first,
// last or anywhere, with faults between replacements.
func (b *builder) hop(subject string) {
	order := append([]string(nil), b.members...)
	b.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	switch b.rng.IntN(3) {
	case 0:
		b.add(Step{Replace: &Replace{Version: subject, Members: []string{TargetLeader}}})
		order = nil // the rest follow in one step: whoever is not the leader
		b.fault(subject)
		b.add(Step{Replace: &Replace{Version: subject}})
	case 1:
		for _, m := range order {
			b.add(Step{Replace: &Replace{Version: subject, Members: []string{m}}})
			b.fault(subject)
		}
	default:
		b.add(Step{Replace: &Replace{Version: subject, Members: order, Order: OrderLeaderLast}})
		b.fault(subject)
	}
	b.expectAt(subject)
}

// fault may inject one allowed fault, healed before the next replacement.
func (b *builder) fault(subject string) {
	if len(b.allowed) == 0 || b.rng.Float64() >= b.g.FaultRate {
		return
	}
	var kinds []StepKind
	for _, k := range FaultKinds {
		if b.allowed[k] {
			kinds = append(kinds, k)
		}
	}
	role := []string{TargetLeader, TargetFollower}[b.rng.IntN(2)]
	switch kinds[b.rng.IntN(len(kinds))] {
	case KindKill:
		b.add(Step{Kill: role})
		b.wait()
		b.add(Step{Restart: TargetAll})
	case KindPartition:
		b.add(Step{Partition: role})
		b.wait()
		b.add(Step{Heal: TargetAll})
	case KindFreeze:
		b.add(Step{Freeze: role})
		b.wait()
		b.add(Step{Thaw: TargetAll})
	case KindAdd:
		name := fmt.Sprintf("m%d", b.next)
		b.next++
		b.add(Step{Add: &Add{Version: subject, Learner: true}})
		b.add(Step{Promote: name})
		b.add(Step{Remove: name})
	case KindCompact:
		b.add(Step{Compact: &Compact{Physical: b.rng.IntN(2) == 0}})
	case KindDefrag:
		b.add(Step{Defrag: TargetAll})
	}
}

// downgrade goes from level to back to back's level: enable, then cancel or complete.
func (b *builder) downgrade(back, level, from string) {
	b.add(Step{Downgrade: &Downgrade{Action: "validate", Version: level}})
	b.add(Step{Downgrade: &Downgrade{Action: "enable", Version: level}})
	b.add(Step{Expect: &Expect{Cluster: level, Storage: level}})
	if b.rng.IntN(2) == 0 {
		b.wait()
		b.add(Step{Downgrade: &Downgrade{Action: "cancel"}})
		b.add(Step{Expect: &Expect{Cluster: from, Storage: from}})
		return
	}
	b.hop(back)
}
