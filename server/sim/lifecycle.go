package sim

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/pkg/judge"
	"etcdx/server/version"
)

// Path is the version lifecycle a run takes its members through while the faults go on: every
// member starts at From and is swapped, one at a time, to To (a rolling upgrade in place); with
// Downgrade, the cluster is then downgraded back to From as an operator would: `downgrade
// enable`, and each member swapped back once its storage is ready for the older binary.
type Path struct {
	From, To  version.Level
	Downgrade bool
}

func (p Path) String() string {
	switch {
	case p.From == p.To:
		return "every member at " + p.From.String()
	case p.Downgrade:
		return fmt.Sprintf("upgrade %s -> %s, then downgrade to %s", p.From, p.To, p.From)
	default:
		return fmt.Sprintf("upgrade %s -> %s", p.From, p.To)
	}
}

// drawPath draws a run's path: a quarter of the runs stay at the newest level, the rest
// upgrade from the level below it (or, a quarter of them, the one below that), half of those
// downgrading back.
func drawPath(rng *rand.Rand) Path {
	known := version.Known()
	newest := known[len(known)-1]
	if rng.Intn(4) == 0 || len(known) < 2 {
		return Path{From: newest, To: newest}
	}
	to := newest
	if rng.Intn(4) == 0 && len(known) >= 3 {
		to = known[len(known)-2]
	}
	return Path{From: to.Prev(), To: to, Downgrade: rng.Intn(2) == 0}
}

// lifecycleSchedule draws when the schedule advances the lifecycle: at each step, six times in
// ten, after that step's fault.
func lifecycleSchedule(seed int64, o Options) (Path, []Action) {
	rng := rand.New(rand.NewSource(seed*7919 + 3))
	p := drawPath(rng)
	if o.Path != nil {
		p = *o.Path
	}
	var out []Action
	if p.From == p.To {
		return p, nil
	}
	for at := o.Step; at < o.Duration; at += o.Step {
		if rng.Float64() < 0.6 {
			out = append(out, Action{At: at, Kind: "advance", describe: "advance: " + p.String()})
		}
	}
	return p, out
}

// lifecycle walks a Path one step at a time, each time the schedule says "advance": the next
// member swapped, or the downgrade enabled. A step that cannot be taken yet (the member is down,
// the cluster version has not reached the new level, the storage is not ready for the older
// binary) is taken at a later advance; a run may end half way, which is a state the checks must
// hold in too.
type lifecycle struct {
	path  Path
	c     *Cluster
	order []int // the order members are swapped in, drawn from the seed
	// downgrade is when the harness first asked for the downgrade (History.now), and its target:
	// the only lowering of the cluster version the checks accept.
	downgrade DowngradeWindow
	upgraded  bool // every member has been swapped to To
	enabled   bool // the downgrade was acknowledged
	h         *History
}

// DowngradeWindow says from when (History.now) the cluster version may go down, and to what.
// The zero window allows no lowering.
type DowngradeWindow = judge.DowngradeWindow

func newLifecycle(p Path, c *Cluster, h *History, rng *rand.Rand) *lifecycle {
	return &lifecycle{path: p, c: c, h: h, order: rng.Perm(len(c.Members()))}
}

// advance takes the next step it can; it reports what it did ("" for nothing) and a harness
// error (a member that would not start as the new level).
func (l *lifecycle) advance(ctx context.Context) (string, error) {
	p := l.path
	if p.From == p.To {
		return "", nil
	}
	if !l.upgraded {
		if m := l.next(p.From); m != nil {
			if m.Server() == nil {
				return "", nil // down for a fault: swapped when it is back
			}
			return fmt.Sprintf("swap %s to %s", m.Name, p.To), l.c.Swap(m, p.To)
		}
		l.upgraded = true
	}
	if !p.Downgrade {
		return "", nil
	}
	if !l.enabled {
		return l.enableDowngrade(ctx)
	}
	m := l.next(p.To)
	if m == nil {
		return "", nil
	}
	s := m.Server()
	if s == nil || !version.ReadyToDowngrade(s.ClusterVersion(), s.StorageVersion(), s.DowngradeInfo()) {
		return "", nil // as an operator waits for "the member is ready to be downgraded"
	}
	return fmt.Sprintf("swap %s to %s", m.Name, p.From), l.c.Swap(m, p.From)
}

// next is the first member, in the drawn order, still at level at.
func (l *lifecycle) next(at version.Level) *Member {
	for _, i := range l.order {
		if m := l.c.Member(i); m.Level() == at {
			return m
		}
	}
	return nil
}

// enableDowngrade asks a running member to enable the downgrade, once the cluster version has
// reached the new level (before that, upstream refuses it, and so does ours).
func (l *lifecycle) enableDowngrade(ctx context.Context) (string, error) {
	up := l.c.Up()
	if len(up) == 0 {
		return "", nil
	}
	s := up[0].Server()
	if s == nil || s.ClusterVersion() != l.path.To {
		return "", nil
	}
	// From the first request on, a lowering to the target is the harness's doing: a request
	// that failed (a timeout, a leader change) may still have been applied.
	if l.downgrade.Target == "" {
		l.downgrade = DowngradeWindow{Target: l.path.From.String(), From: l.h.now()}
	}
	if s.DowngradeInfo().Enabled {
		l.enabled = true // an earlier request that seemed to fail went through
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := s.Downgrade(ctx, &pb.DowngradeRequest{Action: pb.DowngradeRequest_ENABLE, Version: l.path.From.String()}); err != nil {
		return "", nil // asked again at the next advance
	}
	l.enabled = true
	return "downgrade enable " + l.path.From.String(), nil
}
