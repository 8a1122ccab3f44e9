package guide

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"etcdx/upgradelab/assess"
	"etcdx/upgradelab/releases"
)

// replace takes one member up by rolling replacement: the operator adds and starts a learner at
// the new version; once it is caught up the guide promotes it, moves leadership off the old
// member if it leads, and removes the old member (which then stops by itself), saying so before
// each change.
func (g *guide) replace(ctx context.Context, f assess.Facts, h releases.Hop, old string) error {
	want := h.To.String()
	before := map[string]bool{}
	for _, m := range f.Members {
		before[m.ID] = true
	}
	g.step++
	g.say("==> Step %d: add a learner running etcd %s to take %s's place: `etcdctl member add NAME --learner --peer-urls=URL`, then start etcd %s on its host with the settings member add prints (ETCD_INITIAL_CLUSTER_STATE=existing).",
		g.step, want, old, want)
	g.say("    waiting for a new learner running %s, within %d entries of the leader (up to %v)...", want, g.cfg.MaxLag, g.cfg.StepTimeout)
	var learner assess.Member
	f, why := g.waitHeld(ctx, g.cfg.Settle, func(f assess.Facts) string {
		for _, m := range f.Members {
			if before[m.ID] || !m.Learner {
				continue
			}
			if why := memberBack(f, m.Name, want, g.cfg.MaxLag); why != "" {
				return "the new learner is not ready: " + why
			}
			learner = m
			return ""
		}
		return "no new learner in the member list"
	})
	if why != "" {
		return fmt.Errorf("%w: no learner at %s caught up within %v: %s.\nWhat to do: check the new member's log and its flags (--initial-cluster-state=existing, the --initial-cluster member add printed); nothing has changed for %s, which still serves; remove the learner (`etcdctl member remove`) to start over",
			ErrGate, want, g.cfg.StepTimeout, why, old)
	}
	g.say("    ok: learner %s runs %s, applied index %d", learner.Name, want, learner.Live.AppliedIndex)

	cli, err := g.client(g.cfg.Endpoints.Endpoints...)
	if err != nil {
		return err
	}
	defer cli.Close()
	id, oldID := hexID(learner.ID), hexID(memberNamed(f, old).ID)
	g.say("==> upgradelab guide now promotes %s (as `etcdctl member promote %s` would).", learner.Name, learner.ID)
	err = g.retry(ctx, rpctypes.ErrMemberLearnerNotReady, func(ctx context.Context) error {
		_, err := cli.MemberPromote(ctx, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: promoting %s: %v; what to do: `etcdctl member promote %s` once it is caught up, or remove it to start over", ErrGate, learner.Name, err, learner.ID)
	}
	f, why = g.waitFor(ctx, func(f assess.Facts) string {
		if m := memberNamed(f, learner.Name); m == nil || m.Learner {
			return learner.Name + " is not a voter yet"
		}
		return ""
	})
	if why != "" {
		return fmt.Errorf("%w: %s", ErrGate, why)
	}
	if l := leaderOf(f); l != nil && l.Name == old {
		if err := g.moveLeader(ctx, f, old, want); err != nil {
			return err
		}
	}
	g.say("==> upgradelab guide now removes %s (as `etcdctl member remove %s` would): it stops by itself; then clear its host.", old, memberNamed(f, old).ID)
	// Asked of the other members: a member asked to remove itself stops as it applies the
	// change and may answer "server stopped" though the change went through. Right after a
	// promotion the strict reconfiguration check may still count the new voter's peer links as
	// too young (etcdserver: unhealthy cluster): asked again until they are not.
	var others []string
	for _, m := range f.Members {
		if m.Name != old && m.Live != nil {
			others = append(others, m.Live.Endpoint)
		}
	}
	rcli, err := g.client(others...)
	if err != nil {
		return err
	}
	defer rcli.Close()
	err = g.retry(ctx, rpctypes.ErrUnhealthy, func(ctx context.Context) error {
		_, err := rcli.MemberRemove(ctx, oldID)
		return err
	})
	if err != nil && !g.gone(ctx, old) {
		return fmt.Errorf("%w: removing %s: %v; what to do: `etcdctl member remove` by hand; %s is a voter already", ErrGate, old, err, learner.Name)
	}
	if _, why := g.waitFor(ctx, func(f assess.Facts) string {
		if memberNamed(f, old) != nil {
			return old + " is still in the member list"
		}
		return ""
	}); why != "" {
		return fmt.Errorf("%w: %s", ErrGate, why)
	}
	g.say("    ok: %s took %s's place.", learner.Name, old)
	return nil
}

// gone says whether name has left the member list (a change whose answer was lost may have gone
// through).
func (g *guide) gone(ctx context.Context, name string) bool {
	f, err := g.observe(ctx)
	return err == nil && memberNamed(f, name) == nil
}

// retry calls change until it succeeds or fails otherwise than with transient, for at most a
// step's time.
func (g *guide) retry(ctx context.Context, transient error, change func(context.Context) error) error {
	deadline := time.Now().Add(g.cfg.StepTimeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, g.cfg.Endpoints.Timeout)
		err := change(cctx)
		cancel()
		if err == nil || !errors.Is(rpctypes.Error(err), transient) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(g.cfg.Poll)
	}
}

func hexID(s string) uint64 {
	var id uint64
	fmt.Sscanf(s, "%x", &id)
	return id
}
