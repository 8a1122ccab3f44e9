package guide

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/pkg/judge"
	"etcdx/upgradelab/assess"
	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/releases"
)

// Config is one guided run.
type Config struct {
	Endpoints assess.Endpoints
	// Hops is the path (releases.Path), in order.
	Hops []releases.Hop
	// Knowledge is what the path was planned from: its blockers decide the gates between hops.
	Knowledge *releases.Knowledge
	// StepTimeout is how long the operator has for one member's step, and the cluster for a
	// version to move, before the gate counts as failed.
	StepTimeout time.Duration
	// Poll is how often the gates look at the cluster.
	Poll time.Duration
	// MaxLag is how many applied entries a member may trail the leader and count as caught up.
	MaxLag uint64
	// Settle is how long a member must stay back (its version, no errors, within MaxLag, no
	// alarm) before its step counts as done: a member that comes up and falls behind again is
	// not back. Zero: the first poll that finds it back.
	Settle time.Duration
	// Replacement takes each member up by rolling replacement (a learner at the new version
	// added, caught up and promoted, then the old member removed) instead of in place.
	Replacement bool
	Out         io.Writer
}

// ErrGate is a gate that did not pass in time; the error says which and what to do.
var ErrGate = errors.New("gate not passed")

type guide struct {
	cfg  Config
	step int
}

// Run guides the operator through every hop, then checks that the members' key-value stores
// agree (hashkv). It returns an ErrGate error when a gate fails.
func Run(ctx context.Context, cfg Config) error {
	if cfg.StepTimeout == 0 {
		cfg.StepTimeout = 10 * time.Minute
	}
	if cfg.Poll == 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.MaxLag == 0 {
		cfg.MaxLag = 1000
	}
	g := &guide{cfg: cfg}
	for i, h := range cfg.Hops {
		g.say("\n== Hop %d of %d: %s", i+1, len(cfg.Hops), assess.HopText(h))
		if err := g.hop(ctx, h); err != nil {
			return err
		}
		if b, ok := cfg.Knowledge.SnapshotAfter(cfg.Hops, i); ok {
			if err := g.awaitSnapshots(ctx, b); err != nil {
				return err
			}
		}
	}
	return g.hashesAgree(ctx)
}

func (g *guide) say(format string, args ...any) { fmt.Fprintf(g.cfg.Out, format+"\n", args...) }

// observe reads the cluster, and keeps the endpoints of the members that answered for the next
// time: in a rolling replacement, the members first given are removed one by one.
func (g *guide) observe(ctx context.Context) (assess.Facts, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*g.cfg.Poll+5*time.Second)
	defer cancel()
	f, err := assess.CollectLive(ctx, g.cfg.Endpoints)
	if err != nil {
		return f, err
	}
	var answered []string
	for _, m := range f.Members {
		if m.Live != nil {
			answered = append(answered, m.Live.Endpoint)
		}
	}
	if len(answered) > 0 {
		g.cfg.Endpoints.Endpoints = answered
	}
	return f, nil
}

// waitFor polls until cond (a gate) says nothing is missing, or the step's time is up; it
// returns the last reason on timeout.
func (g *guide) waitFor(ctx context.Context, cond func(assess.Facts) string) (assess.Facts, string) {
	return g.waitHeld(ctx, 0, cond)
}

// waitHeld is waitFor for a gate that must hold on every poll for hold before it counts
// (a member that is back must stay back).
func (g *guide) waitHeld(ctx context.Context, hold time.Duration, cond func(assess.Facts) string) (assess.Facts, string) {
	deadline := time.Now().Add(g.cfg.StepTimeout)
	var f assess.Facts
	var since time.Time // when cond began to hold, zero while it does not
	why := "no answer yet"
	for {
		var err error
		if f, err = g.observe(ctx); err != nil {
			why, since = err.Error(), time.Time{}
		} else if why = cond(f); why != "" {
			since = time.Time{}
		} else if since.IsZero() {
			since = time.Now()
			why = "not yet held for " + hold.String()
		}
		if !since.IsZero() && time.Since(since) >= hold {
			return f, ""
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return f, why
		}
		select {
		case <-ctx.Done():
		case <-time.After(g.cfg.Poll):
		}
	}
}

func (g *guide) hop(ctx context.Context, h releases.Hop) error {
	want, minor := h.To.String(), releases.MinorOf(h.To)
	if h.Kind == releases.HopDowngrade {
		if err := g.enableDowngrade(ctx, minor); err != nil {
			return err
		}
	}
	for {
		f, err := g.observe(ctx)
		if err != nil {
			return fmt.Errorf("%w: the cluster does not answer: %v", ErrGate, err)
		}
		name, isLeader := nextToSwap(f, want)
		if name == "" {
			break
		}
		if g.cfg.Replacement && h.Kind != releases.HopDowngrade {
			if err := g.replace(ctx, f, h, name); err != nil {
				return err
			}
			continue
		}
		if isLeader {
			if err := g.moveLeader(ctx, f, name, want); err != nil {
				return err
			}
		}
		g.step++
		m := memberNamed(f, name)
		from := "its binary"
		if m.Live != nil {
			from = "etcd " + m.Live.Version
		}
		g.say("==> Step %d: on %s's host, stop etcd, replace %s with etcd %s (same flags, same data dir), start it.", g.step, name, from, want)
		g.say("    waiting for %s to run %s, healthy, within %d entries of the leader, with no alarm, for %v (up to %v)...", name, want, g.cfg.MaxLag, g.cfg.Settle, g.cfg.StepTimeout)
		f, why := g.waitHeld(ctx, g.cfg.Settle, func(f assess.Facts) string { return memberBack(f, name, want, g.cfg.MaxLag) })
		if why != "" {
			return g.failed(h, name, from, why)
		}
		back := memberNamed(f, name)
		g.say("    ok: %s runs %s, applied index %d", name, want, back.Live.AppliedIndex)
	}
	switch h.Kind {
	case releases.HopDowngrade:
		g.say("    waiting for the downgrade to finish: every member at %s, storage version %s, downgrade info cleared...", want, minor)
		if _, why := g.waitFor(ctx, func(f assess.Facts) string { return downgradeDone(f, want) }); why != "" {
			return fmt.Errorf("%w: the downgrade to %s did not finish within %v: %s; what to do: check that every member runs %s and the leader's log for the downgrade",
				ErrGate, minor, g.cfg.StepTimeout, why, want)
		}
		g.say("    the downgrade is complete: every member runs %s, the cluster and storage versions are %s, and the downgrade info is cleared.", want, minor)
	default:
		g.say("    waiting for the cluster version and every member's storage version to reach %s...", minor)
		if _, why := g.waitFor(ctx, func(f assess.Facts) string { return clusterAt(f, minor) }); why != "" {
			return fmt.Errorf("%w: the cluster did not reach %s within %v: %s; what to do: check that every member runs %s (`etcdctl endpoint status --cluster`) and read the leader's log about the cluster version",
				ErrGate, minor, g.cfg.StepTimeout, why, want)
		}
		g.say("    ok: cluster version %s, storage version %s on every member.", minor, minor)
	}
	return nil
}

// awaitSnapshots waits until every member has saved a snapshot since now: the entries the
// members of the line just left wrote to every WAL are then behind each member's newest
// snapshot, and a later minor that cannot read them never replays them (b, the v2-entries
// blocker).
func (g *guide) awaitSnapshots(ctx context.Context, b releases.Blocker) error {
	f, err := g.observe(ctx)
	if err != nil {
		return fmt.Errorf("%w: the cluster does not answer: %v", ErrGate, err)
	}
	marks, why := snapshotMarks(f)
	if why != "" {
		return fmt.Errorf("%w: before %s every member must save a snapshot, and %s; what to do: check it with `etcdutl check v2store` on a stopped member's data dir, or run `upgradelab assess --data-dir` on a copy of each", ErrGate, b.Into, why)
	}
	g.say("==> Before %s: every member must save a snapshot now that the members of the older line are gone (%s).", b.Into, b.Title)
	g.say("    They left v2 requests in every member's WAL, replayed at each start until a snapshot covers them, and upstream %s refuses them. A member saves a snapshot every --snapshot-count applied entries (100,000 by default at 3.5, 10,000 at 3.6): keep the cluster's usual writes going, or restart each member once with a lower --snapshot-count.", b.Into)
	g.say("    waiting for every member's etcd_debugging_snap_save_total_duration_seconds count to rise (up to %v)...", g.cfg.StepTimeout)
	if _, why := g.waitFor(ctx, func(f assess.Facts) string { return snapshotsSince(f, marks) }); why != "" {
		return fmt.Errorf("%w: before %s: %s within %v.\nWhat to do: the cluster can stay where it is; once every member has saved a snapshot (its etcd_debugging_snap_save_total_duration_seconds count rose), run upgradelab guide again, which goes on from here. Ours at %s replays those entries: a cluster moving every member to ours needs no snapshot first",
			ErrGate, b.Into, why, g.cfg.StepTimeout, b.Into)
	}
	g.say("    ok: every member saved a snapshot.")
	return nil
}

// failed is the error of a member step whose gate did not pass, with the way back.
func (g *guide) failed(h releases.Hop, name, from, why string) error {
	back := fmt.Sprintf("put %s back on %s and start it: until every member runs the new version the cluster keeps its version, so going back is safe", from, name)
	if h.Kind == releases.HopDowngrade {
		back = fmt.Sprintf("put %s back on %s and start it, then `etcdctl downgrade cancel` to give up the downgrade", from, name)
	}
	return fmt.Errorf("%w: %s did not come back as step %d wants within %v: %s.\nWhat to do: read %s's log; if it does not run %s on its data dir, %s; then run `upgradelab assess` again before going on",
		ErrGate, name, g.step, g.cfg.StepTimeout, why, name, h.To, back)
}

// client is a client of the given endpoints (one member's, when it must be that member: moving
// leadership is asked of the leader).
func (g *guide) client(endpoints ...string) (*clientv3.Client, error) {
	ep := g.cfg.Endpoints
	return clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: ep.TLS, Username: ep.Username, Password: ep.Password,
		DialTimeout: ep.Timeout, Logger: zap.NewNop()})
}

// moveLeader moves leadership off the member about to be stopped, saying so first.
func (g *guide) moveLeader(ctx context.Context, f assess.Facts, leader, want string) error {
	to := transferee(f, leader, want)
	if to == "" {
		g.say("    %s leads and no other voter answers: stopping it leaves the cluster without a leader until it is back.", leader)
		return nil
	}
	target := memberNamed(f, to)
	g.say("==> %s leads and stops next: upgradelab guide now moves leadership to %s (as `etcdctl move-leader %s` would).", leader, to, target.ID)
	cli, err := g.client(memberNamed(f, leader).Live.Endpoint)
	if err != nil {
		return err
	}
	defer cli.Close()
	cctx, cancel := context.WithTimeout(ctx, g.cfg.StepTimeout)
	defer cancel()
	if _, err := cli.MoveLeader(cctx, hexID(target.ID)); err != nil {
		return fmt.Errorf("%w: moving leadership from %s to %s: %v; what to do: `etcdctl move-leader` by hand, or stop %s anyway (the others elect a leader)", ErrGate, leader, to, err, leader)
	}
	if _, why := g.waitFor(ctx, func(f assess.Facts) string {
		if l := leaderOf(f); l == nil || l.Name == leader {
			return leader + " still leads"
		}
		return ""
	}); why != "" {
		return fmt.Errorf("%w: %s", ErrGate, why)
	}
	g.say("    ok: %s leads now.", to)
	return nil
}

// enableDowngrade validates and enables the downgrade, saying so first, and waits until the
// cluster and storage versions are at its minor.
func (g *guide) enableDowngrade(ctx context.Context, minor string) error {
	g.say("==> upgradelab guide now validates and enables the downgrade to %s (as `etcdctl downgrade validate %s` and `etcdctl downgrade enable %s` would).", minor, minor, minor)
	cli, err := g.client(g.cfg.Endpoints.Endpoints...)
	if err != nil {
		return err
	}
	defer cli.Close()
	for _, a := range []struct {
		name   string
		action clientv3.DowngradeAction
	}{{"validate", clientv3.DowngradeValidate}, {"enable", clientv3.DowngradeEnable}} {
		cctx, cancel := context.WithTimeout(ctx, g.cfg.StepTimeout)
		_, err := cli.Downgrade(cctx, a.action, minor) // the target as etcdctl sends it
		cancel()
		if err != nil {
			return fmt.Errorf("%w: downgrade %s %s: %v", ErrGate, a.name, minor, err)
		}
	}
	g.say("    waiting for the cluster version and every member's storage version to go down to %s...", minor)
	if _, why := g.waitFor(ctx, func(f assess.Facts) string { return clusterAt(f, minor) }); why != "" {
		return fmt.Errorf("%w: the cluster did not go down to %s within %v: %s; what to do: `etcdctl downgrade cancel` and read the leader's log", ErrGate, minor, g.cfg.StepTimeout, why)
	}
	g.say("    ok: cluster version %s, storage version %s on every member: the binaries can now be swapped.", minor, minor)
	return nil
}

// hashesAgree compares every member's hashkv at one revision.
func (g *guide) hashesAgree(ctx context.Context) error {
	f, err := g.observe(ctx)
	if err != nil {
		return err
	}
	cli, err := g.client(g.cfg.Endpoints.Endpoints...)
	if err != nil {
		return err
	}
	defer cli.Close()
	cctx, cancel := context.WithTimeout(ctx, g.cfg.StepTimeout)
	defer cancel()
	members := map[string]string{}
	for _, m := range f.Members {
		if m.Live != nil {
			members[m.Name] = m.Live.Endpoint
		}
	}
	// A member that has not applied the revision yet refuses it for a moment: Hashes waits.
	hashes, err := cluster.Hashes(cctx, cli, members)
	if err != nil {
		return err
	}
	var rev int64
	for _, h := range hashes {
		rev = h.Revision
	}
	if fs := judge.Hashes(hashes); len(fs) > 0 {
		return fmt.Errorf("%w: %s; what to do: `etcdctl endpoint hashkv --cluster`, and replace the odd member from a healthy member's snapshot", ErrGate, fs[0].Detail)
	}
	g.say("\nDone: the members' key-value stores agree (hashkv at revision %d).", rev)
	return nil
}
