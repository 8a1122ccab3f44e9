package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"etcdx/server/membership"
)

// memberChangeBound is how long the harness keeps at a membership change whose outcome it does
// not know (a timeout, a leader change) before it judges by the membership it reads.
const memberChangeBound = 10 * time.Second

// Replace takes the member in slot i out of the cluster and puts a new member with an empty data
// dir, at the same level, in its slot, as an operator replaces a machine: `member remove`, then
// `member add --learner`; the caller starts the new member (Join) on its empty data dir, and
// Promote makes it a voter once it has caught up. It returns the new member, or nil when the
// cluster refused the removal (strict reconfiguration: a member is cut off), which leaves
// everything as it was.
func (c *Cluster) Replace(ctx context.Context, i int) (*Member, error) {
	old := c.Member(i)
	id := c.IDOf(old)
	removed, err := c.change(ctx, old, func(ctx context.Context, via *Member) (bool, error) {
		_, err := via.Server().RemoveMember(ctx, id)
		if errors.Is(err, membership.ErrMemberNotFound) || errors.Is(err, membership.ErrIDRemoved) {
			return true, nil // an earlier request that seemed to fail went through
		}
		return err == nil, err
	}, func(ms []membership.Member) bool { return !has(ms, id) })
	if err != nil || !removed {
		return nil, err
	}
	c.Stop(old)

	m := c.newMember(old.Level())
	added, err := c.change(ctx, nil, func(ctx context.Context, via *Member) (bool, error) {
		_, _, err := via.Server().AddMember(ctx, []string{m.PeerURL}, true)
		if errors.Is(err, membership.ErrPeerURLExist) {
			return true, nil // added by an earlier request that seemed to fail
		}
		return err == nil, err
	}, func(ms []membership.Member) bool { return byURL(ms, m.PeerURL) != 0 })
	if err != nil {
		return nil, err
	}
	if !added {
		return nil, fmt.Errorf("add %s as a learner after removing %s: not added within %v", m.Name, old.Name, memberChangeBound)
	}
	// The cluster as `member add` prints it for the new member's --initial-cluster.
	initial := map[string][]string{m.Name: {m.PeerURL}}
	for _, o := range c.Members() {
		if o != old {
			initial[o.Name] = []string{o.PeerURL}
		}
	}
	m.cfg.InitialCluster, m.cfg.NewCluster = initial, false
	if err := os.MkdirAll(m.cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.members[i] = m
	c.mu.Unlock()
	c.changed.Notify()
	return m, nil
}

// Join starts a member added by Replace: it learns the cluster from the members it was given and
// catches up from the leader. With every one of them out of reach it cannot start, as a real
// member exits: start it again later.
func (c *Cluster) Join(m *Member) error {
	// During a downgrade a new member must run the target (the cluster refuses a newer one and
	// says so): the operator starts it with the target's binary. Below the cluster version it is
	// refused too (the member it replaced was the last at the older level, so the cluster moved
	// up when it left): the operator starts it with the cluster's binary (make sim, seed 778).
	if via := c.upExcept(m); via != nil {
		if s := via.Server(); s != nil {
			level := m.Level()
			if dg := s.DowngradeInfo(); dg.Enabled && dg.Target().Less(level) {
				level = dg.Target()
			} else if cv := s.ClusterVersion(); !cv.IsZero() && level.Less(cv) {
				level = cv
			}
			m.mu.Lock()
			m.cfg.Level = level
			m.mu.Unlock()
		}
	}
	return c.Restart(m)
}

// Promote asks for the learner m to become a voter; it reports whether m is a voter now.
// A learner that has not caught up yet is refused (ErrLearnerNotReady): ask again later.
func (c *Cluster) Promote(ctx context.Context, m *Member) bool {
	id := c.IDOf(m)
	if id == 0 {
		return false // it never started, so it cannot have caught up
	}
	done, _ := c.change(ctx, m, func(ctx context.Context, via *Member) (bool, error) {
		_, err := via.Server().PromoteMember(ctx, id)
		if errors.Is(err, membership.ErrNotLearner) {
			return true, nil
		}
		if errors.Is(err, membership.ErrLearnerNotReady) {
			return false, nil // a definite answer: not now
		}
		return err == nil, err
	}, func(ms []membership.Member) bool {
		for _, x := range ms {
			if x.ID == id {
				return !x.IsLearner
			}
		}
		return false
	})
	return done
}

// change makes a membership change through a running member other than not. An error leaves its
// outcome unknown (the proposal may still be applied), so it asks again, and reads the
// membership linearizably, until done says the change is in or memberChangeBound has passed;
// a definite answer (false, nil) ends it at once.
func (c *Cluster) change(ctx context.Context, not *Member, try func(context.Context, *Member) (bool, error), done func([]membership.Member) bool) (bool, error) {
	deadline := time.Now().Add(memberChangeBound)
	for time.Now().Before(deadline) {
		changed := c.Changed()
		via := c.upExcept(not)
		if via == nil {
			select {
			case <-changed:
			case <-time.After(time.Until(deadline)):
			case <-ctx.Done():
				return false, ctx.Err()
			}
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok, err := try(tctx, via)
		cancel()
		if ok {
			return true, nil
		}
		if err == nil {
			return false, nil
		}
		if ms, rerr := c.readMembers(ctx, via); rerr == nil && done(ms) {
			return true, nil
		}
		pause(ctx, retryBackoff)
	}
	return false, nil
}

// readMembers is the membership as of a linearizable read through via.
func (c *Cluster) readMembers(ctx context.Context, via *Member) ([]membership.Member, error) {
	s := via.Server()
	if s == nil {
		return nil, errors.New("down")
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.LinearizableReadNotify(rctx); err != nil {
		return nil, err
	}
	return s.Members(), nil
}

// upExcept is a running member other than not, or nil.
func (c *Cluster) upExcept(not *Member) *Member {
	for _, m := range c.Up() {
		if m != not {
			return m
		}
	}
	return nil
}

func has(ms []membership.Member, id uint64) bool {
	for _, m := range ms {
		if m.ID == id {
			return true
		}
	}
	return false
}

func byURL(ms []membership.Member, url string) uint64 {
	for _, m := range ms {
		for _, u := range m.PeerURLs {
			if u == url {
				return m.ID
			}
		}
	}
	return 0
}
