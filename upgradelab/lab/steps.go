package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"etcdx/pkg/judge"
	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/plan"
	"etcdx/upgradelab/runtimes"
)

// run is one plan's execution: the cluster, the lab's client and the runner's settings.
type run struct {
	*Runner
	c   *members
	cli *clientv3.Client
	// refused counts joiners started by refuse steps (their names are refused1, ...).
	refused int
	// rec keeps the members' timeline.
	rec *recorder
	// downgrades are the downgrades enabled, each from when its step began: the cluster
	// version may go down to a target only after it was asked for.
	downgrades []judge.DowngradeWindow
}

// step executes s and returns what it chose or saw (e.g. which member was the leader).
func (r *run) step(ctx context.Context, s plan.Step) (string, error) {
	switch s.Kind() {
	case plan.KindReplace:
		return "", r.replace(ctx, s.Replace)
	case plan.KindDowngrade:
		return r.downgrade(ctx, s.Downgrade)
	case plan.KindExpect:
		return "", r.expect(ctx, s.Expect)
	case plan.KindWait:
		sleep(ctx, time.Duration(s.Wait))
		return "", ctx.Err()
	case plan.KindAdd:
		return r.add(ctx, s.Add)
	case plan.KindCompact:
		return r.compact(ctx, s.Compact)
	case plan.KindSnapshot:
		return r.snapshot(ctx, s.Snapshot)
	case plan.KindRefuse:
		return "", r.refuse(ctx, s.Refuse)
	case plan.KindCrash:
		targets, err := r.c.resolve(ctx, r.cli, s.Crash.Member)
		if err != nil {
			return "", err
		}
		chosen := ""
		if t := s.Crash.Member; t == plan.TargetLeader || t == plan.TargetFollower {
			chosen = fmt.Sprintf("%s is %s", t, names(targets))
		}
		for _, m := range targets {
			if err := crash(ctx, m, s.Crash.At); err != nil {
				return chosen, fmt.Errorf("member %s: %w", m.Name(), err)
			}
		}
		return chosen, nil
	}
	targets, err := r.c.resolve(ctx, r.cli, s.Target())
	if err != nil {
		return "", err
	}
	chosen := ""
	if t := s.Target(); t == plan.TargetLeader || t == plan.TargetFollower {
		chosen = fmt.Sprintf("%s is %s", t, names(targets))
	}
	for _, m := range targets {
		if err := r.memberStep(ctx, s.Kind(), s.Target() == plan.TargetAll, m); err != nil {
			return chosen, fmt.Errorf("member %s: %w", m.Name(), err)
		}
	}
	return chosen, nil
}

// memberStep applies a single-member step to m; with all, members the step does not apply
// to (restart of a running member, thaw of one not frozen) are passed over.
func (r *run) memberStep(ctx context.Context, k plan.StepKind, all bool, m runtimes.Member) error {
	switch k {
	case plan.KindKill:
		return m.Kill(ctx)
	case plan.KindRestart:
		if m.Running(ctx) {
			if all {
				return nil
			}
			return errors.New("is running; kill or stop it first")
		}
		if err := m.Start(ctx, m.Binary()); err != nil {
			return err
		}
		return r.waitHealthy(ctx, m)
	case plan.KindPartition:
		return m.Partition(ctx)
	case plan.KindHeal:
		if all && !m.Partitioned() {
			return nil
		}
		return m.Heal(ctx)
	case plan.KindFreeze:
		return m.Freeze(ctx)
	case plan.KindThaw:
		if all && !m.Frozen() {
			return nil
		}
		return m.Thaw(ctx)
	case plan.KindDefrag:
		if all && (!m.Running(ctx) || m.Frozen() || m.Partitioned()) {
			return nil
		}
		dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		_, err := r.cli.Defragment(dctx, m.ClientURL())
		return err
	case plan.KindPromote:
		return r.promote(ctx, m)
	case plan.KindRemove:
		return r.remove(ctx, m)
	}
	return fmt.Errorf("step kind %q has no member action", k)
}

func (r *run) waitHealthy(ctx context.Context, m runtimes.Member) error {
	ctx, cancel := context.WithTimeout(ctx, r.StartTimeout)
	defer cancel()
	if err := m.WaitHealthy(ctx); err != nil {
		return fmt.Errorf("member %s not healthy: %w; log tail:\n%s", m.Name(), err, tail(m.Log(ctx), 15))
	}
	return nil
}

func tail(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// replace swaps binaries one member at a time, as an operator would. Members already running
// that binary are passed over; "leader" and the order are settled when the step runs.
func (r *run) replace(ctx context.Context, rp *plan.Replace) error {
	targets := append([]runtimes.Member(nil), r.c.list...)
	if len(rp.Members) > 0 {
		targets = nil
		for _, n := range rp.Members {
			ms, err := r.c.resolve(ctx, r.cli, n)
			if err != nil {
				return err
			}
			targets = append(targets, ms...)
		}
	}
	if rp.Order != "" {
		leader, err := r.c.leader(ctx, r.cli)
		if err != nil {
			return err
		}
		var rest []runtimes.Member
		for _, m := range targets {
			if m != leader {
				rest = append(rest, m)
			}
		}
		if len(rest) < len(targets) {
			if rp.Order == plan.OrderLeaderFirst {
				targets = append([]runtimes.Member{leader}, rest...)
			} else {
				targets = append(rest, leader)
			}
		}
	}
	bin := r.Binaries[rp.Version]
	for _, m := range targets {
		if m.Binary().SHA256 == bin.SHA256 && m.Running(ctx) {
			continue
		}
		_, span := r.tracer().Start(ctx, "replace member", trace.WithAttributes(
			attribute.String("member", m.Name()), attribute.String("from", m.Binary().Version), attribute.String("to", bin.Version)))
		err := m.Stop(ctx)
		if err == nil {
			err = m.Start(ctx, bin)
		}
		if err == nil {
			err = r.waitHealthy(ctx, m)
		}
		if err != nil {
			spanErr(span, err)
			span.End()
			return fmt.Errorf("member %s: %w", m.Name(), err)
		}
		span.End()
		r.rec.note(ctx, r.c.list)
	}
	return nil
}

// retryMembership repeats a membership call while the cluster says it cannot take it yet
// (a member just started, a learner not caught up).
func retryMembership(ctx context.Context, what string, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		err := call(cctx)
		ccancel()
		if err == nil {
			return nil
		}
		msg := err.Error()
		transient := strings.Contains(msg, "unhealthy cluster") || strings.Contains(msg, "not enough started members") ||
			strings.Contains(msg, "in sync with leader") || strings.Contains(msg, "leader changed") ||
			strings.Contains(msg, "deadline exceeded") || strings.Contains(msg, "too many learner")
		if !transient {
			return fmt.Errorf("%s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: still refused after 60s: %w", what, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// add adds a member at a subject: the cluster learns of it first, then it starts and joins.
func (r *run) add(ctx context.Context, a *plan.Add) (string, error) {
	name := fmt.Sprintf("m%d", r.c.next)
	r.c.next++
	m, err := r.join(ctx, name, r.Binaries[a.Version], a.Learner)
	if err != nil {
		return "", err
	}
	if err := r.waitHealthy(ctx, m); err != nil {
		return "", err
	}
	return "added " + name, nil
}

// join announces a new member to the cluster and starts it; it does not wait for it.
func (r *run) join(ctx context.Context, name string, bin cluster.Binary, learner bool) (runtimes.Member, error) {
	m, err := r.c.rt.NewMember(ctx, r.c.spec(name))
	if err != nil {
		return nil, err
	}
	err = retryMembership(ctx, "member add "+name, func(ctx context.Context) error {
		var err error
		if learner {
			_, err = r.cli.MemberAddAsLearner(ctx, []string{m.PeerURL()})
		} else {
			_, err = r.cli.MemberAdd(ctx, []string{m.PeerURL()})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	m.Join(r.c.initialCluster(m), "existing")
	r.c.list = append(r.c.list, m)
	r.cli.SetEndpoints(r.c.endpoints()...)
	return m, m.Start(ctx, bin)
}

func (r *run) memberID(ctx context.Context, m runtimes.Member) (uint64, error) {
	ids, err := r.c.ids(ctx, r.cli)
	if err != nil {
		return 0, err
	}
	id, ok := ids[m.Name()]
	if !ok {
		return 0, fmt.Errorf("the cluster does not list %s", m.Name())
	}
	return id, nil
}

func (r *run) promote(ctx context.Context, m runtimes.Member) error {
	id, err := r.memberID(ctx, m)
	if err != nil {
		return err
	}
	return retryMembership(ctx, "member promote", func(ctx context.Context) error {
		_, err := r.cli.MemberPromote(ctx, id)
		return err
	})
}

// remove takes m out of the cluster, then stops it (a removed member may already have
// ended itself) and forgets it.
func (r *run) remove(ctx context.Context, m runtimes.Member) error {
	id, err := r.memberID(ctx, m)
	if err != nil {
		return err
	}
	r.c.drop(m)
	r.cli.SetEndpoints(r.c.endpoints()...)
	err = retryMembership(ctx, "member remove", func(ctx context.Context) error {
		_, err := r.cli.MemberRemove(ctx, id)
		if err != nil && strings.Contains(err.Error(), "member not found") {
			return nil // an earlier try went through
		}
		return err
	})
	if err != nil {
		return err
	}
	return m.Stop(ctx)
}

// compact compacts at the current revision.
func (r *run) compact(ctx context.Context, c *plan.Compact) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := r.cli.Get(ctx, "compact-probe")
	if err != nil {
		return "", fmt.Errorf("read the revision: %w", err)
	}
	rev := resp.Header.Revision
	var opts []clientv3.CompactOption
	if c.Physical {
		opts = append(opts, clientv3.WithCompactPhysical())
	}
	if _, err := r.cli.Compact(ctx, rev, opts...); err != nil && !strings.Contains(err.Error(), "required revision has been compacted") {
		return "", fmt.Errorf("compact at %d: %w", rev, err)
	}
	return fmt.Sprintf("compacted at revision %d", rev), nil
}

// refuse starts a member at a subject that must be refused and checks that it exits with
// the text in its log; then the cluster is put back as it was.
func (r *run) refuse(ctx context.Context, rf *plan.Refuse) error {
	bin := r.Binaries[rf.Version]
	var m runtimes.Member
	var restore func() error
	// Only what the member logs from the refused start on counts.
	logFrom := 0
	if rf.Join {
		r.refused++
		var err error
		if m, err = r.join(ctx, fmt.Sprintf("refused%d", r.refused), bin, false); err != nil {
			return err
		}
		restore = func() error {
			m.Kill(ctx)
			return r.remove(ctx, m)
		}
	} else {
		m = r.c.get(rf.Member)
		if m == nil {
			return fmt.Errorf("no member %s in the cluster now", rf.Member)
		}
		old := m.Binary()
		if err := m.Stop(ctx); err != nil {
			return err
		}
		logFrom = len(m.Log(ctx))
		if err := m.Start(ctx, bin); err != nil {
			return err
		}
		restore = func() error {
			m.Kill(ctx)
			if err := m.Start(ctx, old); err != nil {
				return err
			}
			return r.waitHealthy(ctx, m)
		}
	}
	verdict := r.awaitRefusal(ctx, m, rf, logFrom)
	if err := restore(); err != nil {
		return errors.Join(verdict, fmt.Errorf("putting the cluster back: %w", err))
	}
	return verdict
}

// awaitRefusal waits for m to exit, or to turn healthy (which fails the step).
func (r *run) awaitRefusal(ctx context.Context, m runtimes.Member, rf *plan.Refuse, logFrom int) error {
	ctx, cancel := context.WithTimeout(ctx, r.StartTimeout)
	defer cancel()
	for {
		if !m.Running(ctx) {
			if log := m.Log(ctx)[logFrom:]; !strings.Contains(log, rf.Error) {
				return fmt.Errorf("member %s at %s exited without logging %q; log tail:\n%s", m.Name(), rf.Version, rf.Error, tail(log, 15))
			}
			return nil
		}
		hctx, hcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		healthy := m.WaitHealthy(hctx) == nil
		hcancel()
		if healthy {
			return fmt.Errorf("member %s at %s was accepted and is healthy; it should have been refused with %q", m.Name(), rf.Version, rf.Error)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("member %s at %s neither exited nor turned healthy within %v", m.Name(), rf.Version, r.StartTimeout)
		}
	}
}

// errDowngradeInProgress is upstream's refusal of a downgrade while one is under way.
const errDowngradeInProgress = "cluster has a downgrade job in progress"

// downgrade runs one downgrade action. A downgrade whose target every member already runs is
// done for the operator, but the leader ends it only at its next check (every few seconds,
// upstream as ours): a validate or enable meanwhile is refused as "in progress". The step
// waits for that end, as an operator would, and says how long; a downgrade still under way
// is refused as upstream refuses it.
func (r *run) downgrade(ctx context.Context, d *plan.Downgrade) (string, error) {
	action := map[string]clientv3.DowngradeAction{"validate": clientv3.DowngradeValidate,
		"enable": clientv3.DowngradeEnable, "cancel": clientv3.DowngradeCancel}[d.Action]
	began := time.Now()
	deadline := began.Add(r.ExpectTimeout)
	if d.Action == "enable" && d.Error == "" {
		// An enable the plan expects to succeed (if it fails, so does the run).
		r.downgrades = append(r.downgrades, judge.DowngradeWindow{Target: majorMinor(d.Version, ""), From: began.UnixNano()})
	}
	for {
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err := r.cli.Downgrade(actx, action, d.Version)
		cancel()
		if err != nil && d.Error == "" && strings.Contains(err.Error(), errDowngradeInProgress) &&
			time.Now().Before(deadline) && r.downgradeCompleting(ctx) {
			if sleep(ctx, 200*time.Millisecond); ctx.Err() == nil {
				continue
			}
		}
		var waited string
		if time.Since(began) > time.Second {
			waited = fmt.Sprintf("waited %v for the last downgrade to end", time.Since(began).Round(100*time.Millisecond))
		}
		switch {
		case d.Error == "" && err != nil:
			return waited, fmt.Errorf("downgrade %s %s: %w", d.Action, d.Version, err)
		case d.Error != "" && err == nil:
			return waited, fmt.Errorf("downgrade %s %s succeeded, want an error with %q", d.Action, d.Version, d.Error)
		case d.Error != "" && !strings.Contains(err.Error(), d.Error):
			return waited, fmt.Errorf("downgrade %s %s failed with %q, want %q", d.Action, d.Version, err, d.Error)
		}
		return waited, nil
	}
}

// downgradeCompleting says whether a downgrade is in progress whose target every running
// member's binary already runs.
func (r *run) downgradeCompleting(ctx context.Context) bool {
	var target string
	for _, m := range r.c.list {
		if !m.Running(ctx) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := r.cli.Status(sctx, m.ClientURL())
		cancel()
		if err != nil {
			return false
		}
		if st.DowngradeInfo != nil && st.DowngradeInfo.Enabled {
			target = majorMinor(st.DowngradeInfo.TargetVersion, "")
		}
		if target == "" || majorMinor(st.Version, "") != target {
			return false
		}
	}
	return target != ""
}

// majorMinor cuts "3.6.0" to "3.6"; an empty storage version means 3.5.
func majorMinor(v string, emptyMeans string) string {
	if v == "" {
		return emptyMeans
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// expect polls every running member until all conditions hold or the timeout passes.
func (r *run) expect(ctx context.Context, e *plan.Expect) error {
	timeout := time.Duration(e.Timeout)
	if timeout <= 0 {
		timeout = r.ExpectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		last := r.unmet(ctx, e)
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %v: %s", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// unmet describes the first condition that does not hold, or returns "".
func (r *run) unmet(ctx context.Context, e *plan.Expect) string {
	if e.Log != "" {
		found := false
		for _, m := range r.c.list {
			found = found || strings.Contains(m.Log(ctx), e.Log)
		}
		if !found {
			return fmt.Sprintf("no member logged %q", e.Log)
		}
	}
	for _, m := range r.c.list {
		if !m.Running(ctx) || m.Frozen() || m.Partitioned() {
			continue
		}
		v, err := m.Versions(ctx)
		if err != nil {
			return fmt.Sprintf("member %s: %v", m.Name(), err)
		}
		for _, chk := range []struct{ what, want, got string }{
			{"cluster version", e.Cluster, majorMinor(v.Cluster, "")},
			{"storage version", e.Storage, majorMinor(v.Storage, "3.5")},
			{"server version", e.Server, majorMinor(v.Server, "")},
		} {
			if chk.want != "" && chk.got != chk.want {
				return fmt.Sprintf("member %s: %s is %s, want %s", m.Name(), chk.what, chk.got, chk.want)
			}
		}
	}
	return ""
}
