package lab

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/pkg/judge"
	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/plan"
	"etcdx/upgradelab/runtimes"
)

// members is the run's cluster as the lab tracks it: the members in it now (in order), the
// runtime that runs them, and the name the next added member gets.
type members struct {
	rt    runtimes.Runtime
	dir   string
	token string
	list  []runtimes.Member
	next  int
	// extra, when set, gives a member's extra start flags (tracing).
	extra func(name string) func(cluster.Binary) []string
}

func (c *members) spec(name string) runtimes.Spec {
	s := runtimes.Spec{Name: name, LogPath: filepath.Join(c.dir, name+".log"), Token: c.token}
	if c.extra != nil {
		s.Extra = c.extra(name)
	}
	return s
}

// create makes members m1..mN bootstrapping one cluster together.
func (c *members) create(ctx context.Context, n int) error {
	for i := 1; i <= n; i++ {
		m, err := c.rt.NewMember(ctx, c.spec(fmt.Sprintf("m%d", i)))
		if err != nil {
			return err
		}
		c.list = append(c.list, m)
	}
	c.next = n + 1
	ic := c.initialCluster(nil)
	for _, m := range c.list {
		m.Join(ic, "new")
	}
	return nil
}

// initialCluster is name=peerURL of every member, and of extra.
func (c *members) initialCluster(extra runtimes.Member) string {
	var parts []string
	for _, m := range c.list {
		parts = append(parts, m.Name()+"="+m.PeerURL())
	}
	if extra != nil {
		parts = append(parts, extra.Name()+"="+extra.PeerURL())
	}
	return strings.Join(parts, ",")
}

func (c *members) get(name string) runtimes.Member {
	for _, m := range c.list {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

func (c *members) endpoints() []string {
	var eps []string
	for _, m := range c.list {
		eps = append(eps, m.ClientURL())
	}
	return eps
}

func (c *members) drop(m runtimes.Member) {
	for i, x := range c.list {
		if x == m {
			c.list = append(c.list[:i:i], c.list[i+1:]...)
			return
		}
	}
}

// resolve turns a step's target into members: a name, "all" (every member, for the
// step kinds that take it), or "leader"/"follower", asked of the cluster now.
func (c *members) resolve(ctx context.Context, cli *clientv3.Client, target string) ([]runtimes.Member, error) {
	switch target {
	case plan.TargetAll:
		return append([]runtimes.Member(nil), c.list...), nil
	case plan.TargetLeader, plan.TargetFollower:
		leader, err := c.leader(ctx, cli)
		if err != nil {
			return nil, err
		}
		if target == plan.TargetLeader {
			return []runtimes.Member{leader}, nil
		}
		for _, m := range c.list {
			if m != leader && m.Running(ctx) && !m.Frozen() && !m.Partitioned() {
				return []runtimes.Member{m}, nil
			}
		}
		return nil, fmt.Errorf("no running follower to choose (leader is %s)", leader.Name())
	}
	if m := c.get(target); m != nil {
		return []runtimes.Member{m}, nil
	}
	return nil, fmt.Errorf("no member %s in the cluster now", target)
}

// leader asks the reachable members who leads, until one knows (an election may be going on).
func (c *members) leader(ctx context.Context, cli *clientv3.Client) (runtimes.Member, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		ids, err := c.ids(ctx, cli)
		if err == nil {
			for _, m := range c.list {
				if !m.Running(ctx) || m.Frozen() || m.Partitioned() {
					continue
				}
				sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
				st, err := cli.Status(sctx, m.ClientURL())
				scancel()
				if err != nil {
					last = err
					continue
				}
				if st.Leader != 0 {
					for name, id := range ids {
						if id == st.Leader {
							return c.get(name), nil
						}
					}
				}
			}
			last = fmt.Errorf("no member knows a leader")
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("find the leader: %v", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ids maps member names to IDs as the cluster lists them.
func (c *members) ids(ctx context.Context, cli *clientv3.Client) (map[string]uint64, error) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ml, err := cli.MemberList(lctx)
	if err != nil {
		return nil, fmt.Errorf("member list: %w", err)
	}
	out := map[string]uint64{}
	for _, m := range ml.Members {
		for _, l := range c.list {
			for _, u := range m.PeerURLs {
				if u == l.PeerURL() {
					out[l.Name()] = m.ID
				}
			}
		}
	}
	return out, nil
}

// names lists members' names, sorted.
func names(ms []runtimes.Member) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// hashes asks every member that can answer for its HashKV at one revision, the cluster's
// current one, waiting for members still applying up to it.
func (r *run) hashes(ctx context.Context) (map[string]judge.MemberHash, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	members := map[string]string{}
	for _, m := range r.c.list {
		if m.Running(ctx) && !m.Frozen() && !m.Partitioned() {
			members[m.Name()] = m.ClientURL()
		}
	}
	return cluster.Hashes(ctx, r.cli, members)
}
