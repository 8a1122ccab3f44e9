package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/pkg/judge"
	"etcdx/pkg/register"
	"etcdx/server/backend"
	"etcdx/server/etcdserver"
	"etcdx/server/failpoint"
	"etcdx/server/mvcc"
	"etcdx/server/schema"
)

// Options shape one simulated run.
type Options struct {
	// Members in the cluster (default 3); Clients issuing register operations (default 3).
	Members, Clients int
	// Duration of the faulty phase (default 4 s); Step, how often the schedule may act
	// (default 250 ms).
	Duration, Step time.Duration
	// Keys the register clients share (default 8); MaxRegisterOps bounds the register history
	// porcupine judges (default 3,000; the clients go on with ledger writes after it): writes
	// of unknown outcome, many after a power cut, make the search grow fast with the history.
	Keys, MaxRegisterOps int
	// Dir holds the members' data directories.
	Dir string
	// Log receives the members' logs at info level (default: none).
	Log io.Writer
	// LyingDisks makes every member's WAL disk acknowledge syncs and drop the data, and forces
	// a power cut of every member halfway through: a planted bug the checks must catch.
	LyingDisks bool
	// StarveLearners replaces a member by a learner at a third of the run and loses every
	// message to that learner: a planted bug (a learner that can never catch up) the learner
	// check must catch.
	StarveLearners bool
	// JumpClocks, when set, moves every member's lease clock forward by this much, again and
	// again through the middle of the run: a planted bug (a clock running ahead) the lease
	// check must catch.
	JumpClocks time.Duration
	// Path, when set, is the version lifecycle of the run instead of the seed's draw.
	Path *Path
	// Diverge, once the run has settled and before the checks, rewrites the value of one
	// member's newest stored record in its database, as a disk fault would, leaving its
	// revisions alone: a planted bug only the hash check can see.
	Diverge bool
	// Think is a register client's pause between operations (default none: on the wall clock
	// the clients go as fast as the cluster answers). Under a virtual clock (a synctest
	// bubble, where time moves only while every goroutine waits) clients that never wait would
	// hold time still: give them one.
	Think time.Duration
}

func (o *Options) defaults() {
	if o.Members == 0 {
		o.Members = 3
	}
	if o.Clients == 0 {
		o.Clients = 3
	}
	if o.Duration == 0 {
		o.Duration = 4 * time.Second
	}
	if o.Step == 0 {
		o.Step = 250 * time.Millisecond
	}
	if o.Keys == 0 {
		o.Keys = 8
	}
	if o.MaxRegisterOps == 0 {
		o.MaxRegisterOps = 3000
	}
}

// Action is one step of a fault schedule.
type Action struct {
	At time.Duration
	// Kind: "isolate", "cut" (one way From -> To), "mend", "restart" (stop now, start Back
	// later), "crash" (cut the member's power now, start it Back later), "powercut" (every
	// member crashes at once and starts again), "faults", "replace" (a member replaced by a new
	// learner, Cluster.Replace), "delay" (a failpoint sleeps, in every member: gofail's registry is
	// the process's; a no-op in a build without failpoints), "advance" (the next step of the
	// run's version lifecycle, Path).
	Kind   string
	Member int // index in the cluster
	To     int
	Back   time.Duration
	// Torn: the power cut tears the last write-back (Disk.PowerOffTorn) instead of losing every
	// unsynced append.
	Torn bool
	// Point and Terms: a "delay" sets the failpoint Point to Terms (a sleep) until the next one.
	Point    failpoint.Name
	Terms    string
	Faults   Faults
	describe string
}

func (a Action) String() string { return fmt.Sprintf("%v %s", a.At, a.describe) }

// Schedule draws a run's fault schedule from its seed: the same seed, the same schedule. At
// most one member is down at a time, so a quorum can form again between faults.
func Schedule(seed int64, o Options) (out []Action) {
	o.defaults()
	rng := rand.New(rand.NewSource(seed))
	downUntil := time.Duration(0)
	powercut := false // at most one per run
	replaced := 0     // at most two per run
	_, advances := lifecycleSchedule(seed, o)
	defer func() {
		out = append(out, advances...)
		sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	}()
	for at := o.Step; at < o.Duration; at += o.Step {
		a := Action{At: at, Member: rng.Intn(o.Members)}
		switch p := rng.Float64(); {
		case p < 0.15:
			a.Kind, a.describe = "isolate", fmt.Sprintf("isolate m%d", a.Member+1)
		case p < 0.30:
			a.Kind, a.To = "cut", (a.Member+1+rng.Intn(o.Members-1))%o.Members
			a.describe = fmt.Sprintf("cut m%d -> m%d", a.Member+1, a.To+1)
		case p < 0.45:
			a.Kind, a.describe = "mend", "mend every link"
		case p < 0.60:
			if at < downUntil {
				continue
			}
			a.Kind, a.Back = "restart", time.Duration(1+rng.Intn(4))*o.Step
			downUntil = at + a.Back + o.Step
			a.describe = fmt.Sprintf("stop m%d, back after %v", a.Member+1, a.Back)
			if rng.Intn(2) == 0 {
				a.Kind, a.Torn = "crash", rng.Intn(2) == 0
				a.describe = fmt.Sprintf("cut m%d's power%s, back after %v", a.Member+1, tornText(a.Torn), a.Back)
			}
		case p < 0.63:
			if at < downUntil || powercut {
				continue
			}
			powercut = true
			a.Kind, a.Torn = "powercut", rng.Intn(2) == 0
			a.describe = fmt.Sprintf("cut every member's power%s; all start again", tornText(a.Torn))
			downUntil = at + o.Step
		case p < 0.70:
			a.Kind = "faults"
			a.Faults = Faults{Drop: rng.Float64() * 0.1, Duplicate: rng.Float64() * 0.05, Reorder: rng.Float64() * 0.1,
				MaxDelay: time.Duration(rng.Intn(20)) * time.Millisecond}
			a.describe = fmt.Sprintf("faults %+v", a.Faults)
		case p < 0.76:
			if at < downUntil || replaced == 2 {
				continue
			}
			replaced++
			a.Kind, a.describe = "replace", fmt.Sprintf("replace m%d's slot: remove it, add a learner, promote it", a.Member+1)
			downUntil = at + o.Step
		case p < 0.82:
			a.Kind, a.Point = "delay", delayPoints[rng.Intn(len(delayPoints))]
			a.Terms = fmt.Sprintf("sleep(%d)", 1+rng.Intn(10))
			a.describe = fmt.Sprintf("failpoint %s=%s in every member", a.Point, a.Terms)
		default:
			continue
		}
		out = append(out, a)
	}
	return out
}

// delayPoints are the failpoints on the paths a run takes (raft's loop, the WAL, applying,
// snapshots, the backend's commits, lease renewals) that a "delay" slows down.
var delayPoints = []failpoint.Name{
	failpoint.RaftBeforeSave, failpoint.RaftAfterSave, failpoint.RaftBeforeLeaderSend, failpoint.RaftBeforeFollowerSend,
	failpoint.RaftBeforeAdvance, failpoint.RaftBeforeApplySnap, failpoint.RaftAfterApplySnap, failpoint.RaftAfterWALRelease,
	failpoint.RaftBeforeSaveSnap, failpoint.RaftAfterSaveSnap, failpoint.ApplyBeforeOpenSnapshot,
	failpoint.BeforeApplyOneEntryNormal, failpoint.BeforeApplyOneConfChange, failpoint.BeforeCommit, failpoint.AfterCommit,
	failpoint.WALBeforeSync, failpoint.WALAfterSync, failpoint.BeforeServeHTTPLeaseRenew, failpoint.BeforeCheckpointInLeaseRenew,
}

func tornText(torn bool) string {
	if torn {
		return " (torn write-back)"
	}
	return ""
}

// Result is what a run found.
type Result struct {
	Seed     int64
	Path     Path
	Schedule []Action
	// Lifecycle is what the advances did, in order.
	Lifecycle []string
	// Ops is how many register operations were recorded; Acked, ledger writes acknowledged;
	// WatchEvents, events the watches delivered and the check compared.
	// LeasesExpired, leases whose expiry the lease check judged; Delays, failpoint delays set
	// (none in a build without failpoints).
	Ops, Acked, WatchEvents, LeasesExpired, Delays int
	// Failures are the checks that failed; Findings, those of pkg/judge's checks among them,
	// which name their check.
	Failures []string
	Findings []judge.Finding
}

// Failed reports whether a check failed.
func (r *Result) Failed() bool { return len(r.Failures) > 0 }

func (r *Result) failf(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// found records what one of pkg/judge's checks found.
func (r *Result) found(fs ...judge.Finding) {
	for _, f := range fs {
		r.Findings = append(r.Findings, f)
		r.Failures = append(r.Failures, f.String())
	}
}

// Run runs one seeded simulation: a cluster under client load and the seed's fault schedule,
// then every check on what was recorded. An error is a harness failure (the cluster could not
// start); a failed check is in the Result.
func Run(ctx context.Context, seed int64, o Options) (*Result, error) {
	o.defaults()
	path, _ := lifecycleSchedule(seed, o)
	res := &Result{Seed: seed, Path: path, Schedule: Schedule(seed, o)}
	if o.LyingDisks {
		res.Schedule = append(res.Schedule, Action{At: o.Duration / 2, Kind: "powercut", describe: "cut every member's power (lying disks)"})
	}
	if o.StarveLearners {
		res.Schedule = append(res.Schedule, Action{At: o.Duration / 3, Kind: "replace", Member: 0, describe: "replace member 0 by a learner that gets no message (starved learners)"})
	}
	sort.SliceStable(res.Schedule, func(i, j int) bool { return res.Schedule[i].At < res.Schedule[j].At })
	net := NewNetwork(rand.New(rand.NewSource(seed+1)), Faults{})
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := NewCluster(startCtx, net, ClusterConfig{Size: o.Members, Dir: o.Dir, Log: o.Log, Level: path.From})
	cancel()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if o.LyingDisks {
		for _, m := range c.Members() {
			m.Disk.DropSyncs()
		}
	}

	hist := NewHistory()
	watches := newWatchers(c, hist)
	versions := newVersionSampler(c, hist)
	life := newLifecycle(path, c, hist, rand.New(rand.NewSource(seed+98)))
	tear := rand.New(rand.NewSource(seed + 97)) // where torn write-backs stop
	// Clients stop first; the watches and the version sampler go on until the last lease can
	// have expired.
	stop, stopObservers := make(chan struct{}), make(chan struct{})
	var wg, observers sync.WaitGroup
	for i := 0; i < o.Clients; i++ {
		wg.Add(1)
		go func(client int) {
			defer wg.Done()
			runClient(c, hist, rand.New(rand.NewSource(seed+100+int64(client))), client, o.Keys, o.MaxRegisterOps, o.Think, stop)
		}(i)
	}
	leases := newLeaseLog()
	wg.Add(1)
	go func() {
		defer wg.Done()
		runLeaseClient(c, hist, leases, rand.New(rand.NewSource(seed+99)), stop)
	}()
	observers.Add(2)
	go func() { defer observers.Done(); watches.run(stopObservers) }()
	go func() { defer observers.Done(); versions.run(stopObservers) }()

	// The schedule, on the wall clock from now.
	begin := time.Now()
	if o.JumpClocks > 0 {
		// Every 100 ms through the middle half of the run: leases alive at each jump are cut short.
		for at := o.Duration / 4; at < 3*o.Duration/4; at += 100 * time.Millisecond {
			time.AfterFunc(at, func() {
				for _, m := range c.Members() {
					m.JumpClock(o.JumpClocks)
				}
			})
		}
	}
	type pending struct {
		at time.Time
		m  *Member
	}
	var restarts []pending
	var delayed failpoint.Name // the failpoint a "delay" set, cleared by the next one and at the end
	defer func() {
		if delayed != "" {
			failpoint.Clear(delayed)
		}
	}()
	var learners []*Member // added by a replacement, not yet promoted
	var joins []*Member    // added, but could not start yet (every peer it knows was out of reach)
	for _, a := range res.Schedule {
		pause(ctx, time.Until(begin.Add(a.At)))
		for len(restarts) > 0 && !time.Now().Before(restarts[0].at) {
			if err := c.Restart(restarts[0].m); errors.Is(err, etcdserver.ErrNotAdded) {
				// Nothing of its join was synced before the crash, so it joins afresh, and the
				// peer it asked has not applied its addition yet (a partition): as a join, again.
				joins = append(joins, restarts[0].m)
			} else if err != nil {
				res.found(judge.Finding{Check: judge.MemberStartRefused, Detail: fmt.Sprintf("restart %s: %v", restarts[0].m.Name, err)})
			}
			restarts = restarts[1:]
		}
		for i := 0; i < len(joins) && !o.StarveLearners; i++ { // a starved joiner never starts
			if c.Join(joins[i]) == nil {
				joins = append(joins[:i], joins[i+1:]...)
				i--
			}
		}
		for i := 0; i < len(learners); i++ {
			if learners[i].Server() != nil && c.Promote(ctx, learners[i]) {
				res.Lifecycle = append(res.Lifecycle, fmt.Sprintf("%v promote %s", a.At, learners[i].Name))
				learners = append(learners[:i], learners[i+1:]...)
				i--
			}
		}
		m := c.Member(a.Member)
		switch a.Kind {
		case "isolate":
			net.Isolate(c.IDOf(m))
		case "cut":
			net.Cut(c.IDOf(m), c.IDOf(c.Member(a.To)))
		case "mend":
			net.MendAll()
		case "restart":
			c.Stop(m)
			restarts = append(restarts, pending{at: time.Now().Add(a.Back), m: m})
		case "crash":
			if a.Torn {
				if err := c.CrashTorn(m, tear); err != nil {
					res.failf("tear %s's write-back: %v", m.Name, err)
				}
			} else {
				c.Crash(m)
			}
			restarts = append(restarts, pending{at: time.Now().Add(a.Back), m: m})
		case "powercut":
			for _, m := range c.Members() {
				// all at the same instant, before any stops
				if !a.Torn {
					m.Disk.PowerOff()
				} else if err := m.Disk.PowerOffTorn(tear); err != nil {
					res.failf("tear %s's write-back: %v", m.Name, err)
				}
			}
			for _, m := range c.Members() {
				c.Stop(m)
			}
			for _, m := range c.Members() {
				if err := c.Restart(m); err != nil {
					res.found(judge.Finding{Check: judge.MemberStartRefused, Detail: fmt.Sprintf("start %s after the power cut: %v", m.Name, err)})
				}
			}
		case "faults":
			net.SetFaults(a.Faults)
		case "replace":
			if len(restarts) > 0 || len(learners) > 0 || len(joins) > 0 || len(c.Up()) < len(c.Members()) {
				continue // one member out at a time
			}
			nm, err := c.Replace(ctx, a.Member)
			switch {
			case err != nil:
				res.failf("replace %s: %v", m.Name, err)
			case nm != nil:
				learners = append(learners, nm)
				res.Lifecycle = append(res.Lifecycle, fmt.Sprintf("%v replace %s by learner %s", a.At, m.Name, nm.Name))
				if o.StarveLearners {
					// Nothing reaches it, so it cannot even start (a start would only wait
					// out its bound): it stays a learner that never catches up.
					net.Starve(nm.PeerURL)
					joins = append(joins, nm)
				} else if err := c.Join(nm); err != nil {
					joins = append(joins, nm) // its peers are out of reach: again at the next step
				}
			}
		case "delay":
			if delayed != "" {
				failpoint.Clear(delayed)
			}
			if err := failpoint.Set(a.Point, a.Terms); err == nil {
				delayed = a.Point
				res.Delays++
			}
		case "advance":
			did, err := life.advance(ctx)
			if err != nil {
				res.failf("%s: %v", did, err)
			}
			if did != "" {
				res.Lifecycle = append(res.Lifecycle, fmt.Sprintf("%v %s", a.At, did))
			}
		}
	}
	pause(ctx, time.Until(begin.Add(o.Duration)))
	// Quiet: every fault gone, every member back; the clients go on a little so the healed
	// cluster serves them too, then stop.
	if delayed != "" {
		failpoint.Clear(delayed)
		delayed = ""
	}
	net.SetFaults(Faults{})
	net.MendAll()
	for _, p := range restarts {
		if err := c.Restart(p.m); errors.Is(err, etcdserver.ErrNotAdded) {
			joins = append(joins, p.m)
		} else if err != nil {
			res.found(judge.Finding{Check: judge.MemberStartRefused, Detail: fmt.Sprintf("restart %s: %v", p.m.Name, err)})
		}
	}
	for _, m := range joins {
		if o.StarveLearners {
			break // a starved joiner never starts
		}
		// The peer a joiner asks may not have applied its addition yet, the partitions just
		// mended: as an operator restarts it, again, for as long as a membership change may take.
		deadline := time.Now().Add(memberChangeBound)
		err := c.Join(m)
		for errors.Is(err, etcdserver.ErrNotAdded) && time.Now().Before(deadline) {
			pause(ctx, retryBackoff)
			err = c.Join(m)
		}
		if err != nil {
			res.failf("%s could not join once the faults ended: %v", m.Name, err)
		}
	}
	// A starved learner (the planted bug) can never publish itself: waiting for it would only
	// spend the bound.
	if !o.StarveLearners {
		readyCtx, cancelReady := context.WithTimeout(ctx, 30*time.Second)
		if err := c.WaitReady(readyCtx); err != nil {
			res.failf("after the faults: %v", err)
		}
		cancelReady()
	}
	// A learner catches up once the faults are gone: it must be promotable.
	for _, l := range learners {
		deadline := time.Now().Add(memberChangeBound)
		for !c.Promote(ctx, l) {
			if time.Now().After(deadline) {
				res.found(judge.Finding{Check: judge.LearnerNotPromotable, Detail: fmt.Sprintf("learner %s could not be promoted within %v of the faults ending", l.Name, memberChangeBound)})
				break
			}
			pause(ctx, retryBackoff)
		}
	}
	if o.StarveLearners {
		// Nothing after this can settle with a member that gets no message; the planted bug
		// is for the learner check above.
		res.failf("starved learners: the run ends at the learner check")
		close(stop)
		wg.Wait()
		close(stopObservers)
		observers.Wait()
		return res, nil
	}
	pause(ctx, o.Step)
	close(stop)
	wg.Wait()
	// A lease expires at the leader's next check (every 500 ms) after its TTL, then its revoke
	// goes through raft.
	pause(ctx, leases.longestTTL()+time.Second)
	close(stopObservers)
	observers.Wait()

	res.Ops, res.Acked = len(hist.Ops()), len(hist.Acked())
	check(ctx, c, hist, watches, versions, life.downgrade, o.Diverge, res)
	checkLeases(watches, leases, res)
	return res, nil
}

// runClient issues register operations (a put or a linearizable get of one of keys) to a
// random running member, and a ledger write (a key written once) after every few, until stop.
func runClient(c *Cluster, h *History, rng *rand.Rand, client, keys, maxOps int, think time.Duration, stop <-chan struct{}) {
	var pause <-chan time.Time // nil without a think time: never ready
	for n := 0; ; n++ {
		if think > 0 {
			pause = time.After(think)
		}
		select {
		case <-stop:
			return
		case <-pause:
		default:
			if pause != nil {
				select {
				case <-stop:
					return
				case <-pause:
				}
			}
		}
		changed := c.Changed()
		up := c.Up()
		if len(up) == 0 {
			select {
			case <-changed:
			case <-stop:
				return
			}
			continue
		}
		s := up[rng.Intn(len(up))].Server()
		if s == nil {
			continue
		}
		key := fmt.Sprintf("reg/%d", rng.Intn(keys))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		full := h.Len() >= maxOps
		switch {
		case full:
			// The register history is full: only ledger writes from here on.
		case rng.Intn(2) == 0:
			val := fmt.Sprintf("c%d-%d", client, n)
			op := Op{Client: client, Key: key, Write: true, Value: val, Call: h.now()}
			resp, err := s.Put(ctx, &pb.PutRequest{Key: []byte(key), Value: []byte(val)})
			op.Return = h.now()
			if err != nil {
				op.Return = math.MaxInt64 // it may still be applied
			} else {
				op.Rev = resp.Header.Revision
			}
			h.Add(op)
		default:
			op := Op{Client: client, Key: key, Call: h.now()}
			resp, err := s.Range(ctx, &pb.RangeRequest{Key: []byte(key)})
			op.Return = h.now()
			if err == nil {
				if len(resp.Kvs) > 0 {
					op.Value = string(resp.Kvs[0].Value)
				}
				op.Rev = resp.Header.Revision
				h.Add(op)
			}
		}
		if full || n%4 == 0 {
			k, v := fmt.Sprintf("ledger/c%d/%06d", client, n), fmt.Sprintf("v%d", n)
			if _, err := s.Put(ctx, &pb.PutRequest{Key: []byte(k), Value: []byte(v)}); err == nil {
				h.Ack(k, v)
			}
		}
		cancel()
	}
}

// watchers keeps a watch of every key open on each running member, re-opened after a restart
// from the revision after the last one seen, as a client does.
type watchers struct {
	c  *Cluster
	h  *History
	mu sync.Mutex
	// events and from per member name: what each incarnation's watch delivered.
	got []watchLog
}

type watchLog struct {
	member string
	from   int64
	events []Event
	// at is when each event arrived (nanoseconds since the run began).
	at []int64
}

func newWatchers(c *Cluster, h *History) *watchers { return &watchers{c: c, h: h} }

func (w *watchers) run(stop <-chan struct{}) {
	var wg sync.WaitGroup
	for slot := range w.c.Members() {
		wg.Add(1)
		go func(slot int) {
			defer wg.Done()
			// A slot's watch goes on from where it was when its member is replaced: the new
			// member's store holds the same history once it has caught up.
			next := int64(1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				changed := w.c.Changed()
				m := w.c.Member(slot)
				s := m.Server()
				if s == nil {
					select {
					case <-changed:
					case <-stop:
						return
					}
					continue
				}
				next = w.follow(m.Name, s.KV(), s.Stopping(), next, stop)
				select {
				case <-s.Stopping():
					// Until the stopping member is gone (Server nil), follow would return
					// at once: wait for the slot to change, or the loop spins (and under a
					// virtual clock holds time still, so the stop never ends).
					select {
					case <-changed:
					case <-stop:
						return
					}
				default:
				}
			}
		}(slot)
	}
	wg.Wait()
}

// follow watches every key on one incarnation from revision from until it stops, recording what
// it delivers; it returns the revision to go on from.
func (w *watchers) follow(name string, kv *mvcc.Store, stopping <-chan struct{}, from int64, stop <-chan struct{}) int64 {
	ws := kv.NewWatchStream()
	defer ws.Close()
	if _, err := ws.Watch(0, []byte{0}, []byte{0xff}, from); err != nil {
		// Only a watch ID in use fails, which a fresh stream has none of: wait out the
		// incarnation rather than spin.
		select {
		case <-stopping:
		case <-stop:
		}
		return from
	}
	log := watchLog{member: name, from: from}
	defer func() {
		w.mu.Lock()
		w.got = append(w.got, log)
		w.mu.Unlock()
	}()
	next := from
	for {
		select {
		case r, ok := <-ws.Chan():
			if !ok {
				return next
			}
			for _, ev := range r.Events {
				log.events = append(log.events, eventOf(ev))
				log.at = append(log.at, w.h.now())
				next = ev.KV.ModRevision + 1
			}
		case <-stopping:
			return next
		case <-stop:
			return next
		}
	}
}

func eventOf(ev mvcc.Event) Event {
	return Event{Rev: ev.KV.ModRevision, Key: string(ev.KV.Key), Value: string(ev.KV.Value), Delete: ev.Type == mvccpb.DELETE}
}

// versionSampler records the cluster version each running member reports, with the level it
// runs as, every few ms.
type versionSampler struct {
	c    *Cluster
	h    *History
	mu   sync.Mutex
	seen map[string][]VersionSample
}

func newVersionSampler(c *Cluster, h *History) *versionSampler {
	return &versionSampler{c: c, h: h, seen: map[string][]VersionSample{}}
}

func (v *versionSampler) run(stop <-chan struct{}) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, m := range v.c.Members() {
			s := m.Server()
			if s == nil {
				continue
			}
			select {
			case <-s.ReadyNotify():
			default:
				continue // still replaying its log: not serving what it holds yet
			}
			if sample, ok := v.sample(s); ok {
				v.mu.Lock()
				v.seen[m.Name] = append(v.seen[m.Name], sample)
				v.mu.Unlock()
			}
		}
	}
}

// sample is what a member reports now; false before it knows a cluster version.
func (v *versionSampler) sample(s *etcdserver.Server) (VersionSample, bool) {
	cv, sv := s.Versions()
	if cv.IsZero() {
		return VersionSample{}, false
	}
	out := VersionSample{At: v.h.now(), Cluster: cv.String(), Level: s.Level().String()}
	if !sv.IsZero() {
		out.Storage = sv.String()
	}
	return out, true
}

// check runs every check on the quiet cluster and the recorded history.
func check(ctx context.Context, c *Cluster, h *History, w *watchers, v *versionSampler, dg DowngradeWindow, diverge bool, res *Result) {
	ops := h.Ops()
	res.found(CheckRevisions(ops)...)
	if drifts := c.Drifts(); len(drifts) > 0 {
		res.found(judge.Finding{Check: judge.MembershipDrift, Detail: fmt.Sprintf("a member found its v3 store out of line with its v2 store: %v", drifts)})
	}
	final, err := settle(ctx, c)
	if err != nil {
		res.failf("settle: %v", err)
		return
	}
	if diverge {
		// Not member 0: its store is the watches' reference.
		if err := divergeNewest(c.Member(1).Server().Backend()); err != nil {
			res.failf("plant a divergence: %v", err)
		}
	}
	// Settled, every member's storage version is where the cluster version puts it.
	for _, m := range c.Members() {
		if s := m.Server(); s != nil {
			if sample, ok := v.sample(s); ok {
				res.found(judge.StorageSettled(m.Name, sample)...)
			}
		}
	}
	// The store's own history, from revision 1: what the watches are compared with, and what
	// tells the writes of unknown outcome that took effect from those that did not.
	ref, err := storeHistory(c.Member(0).Server().KV(), final)
	if err != nil {
		res.failf("read the store's history: %v", err)
		return
	}
	resolved := register.ResolveUnknown(ops, appliedIn(ref).Applied)
	if err := CheckLinearizable(resolved, time.Minute); err != nil {
		res.found(judge.Finding{Check: judge.NotLinearizable, Detail: err.Error()})
	}
	// Every member holds every acknowledged ledger write, and the same keyspace.
	acked := h.Acked()
	hashes := map[string]judge.MemberHash{}
	for _, m := range c.Members() {
		s := m.Server()
		r, err := s.KV().Range([]byte("ledger/"), []byte("ledger0"), mvcc.RangeOptions{})
		if err != nil {
			res.failf("read the ledger on %s: %v", m.Name, err)
			continue
		}
		have := map[string]string{}
		var recs []judge.Record
		for _, kv := range r.KVs {
			have[string(kv.Key)] = string(kv.Value)
			recs = append(recs, judge.Record{Key: string(kv.Key), Version: kv.Version, Create: kv.CreateRevision, ModRevision: kv.ModRevision})
		}
		// Every ledger key is written once: a replay that applied an entry twice shows here.
		res.found(judge.WrittenOnce(m.Name, recs)...)
		if lost := judge.LostWrites(acked, have); len(lost) > 0 {
			res.found(judge.Finding{Check: judge.LostWrite, Detail: fmt.Sprintf("%s lost %d of %d acknowledged writes: %s", m.Name, len(lost), len(acked), strings.Join(lost[:min(5, len(lost))], ", "))})
		}
		hash, _, _, compacted, err := s.KV().HashKV(final)
		if err != nil {
			res.failf("hashkv on %s: %v", m.Name, err)
			continue
		}
		hashes[m.Name] = judge.MemberHash{Hash: hash, CompactRevision: compacted, Revision: final}
	}
	res.found(judge.Hashes(hashes)...)
	// Watches: the store's own history from revision 1 is the reference.
	w.mu.Lock()
	logs := append([]watchLog(nil), w.got...)
	w.mu.Unlock()
	for _, l := range logs {
		last := l.from - 1
		if n := len(l.events); n > 0 {
			last = l.events[n-1].Rev
		}
		res.found(judge.Watch("watch on "+l.member, l.events, judge.WatchReference{History: ref, From: l.from, UpTo: last})...)
		res.WatchEvents += len(l.events)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for name, seen := range v.seen {
		res.found(judge.ClusterVersions(name, seen, []judge.DowngradeWindow{dg})...)
	}
	res.found(judge.ClusterVersionsAcross(v.seen, []judge.DowngradeWindow{dg})...)
}

// settle waits until every member has applied the same revision, and returns it.
func settle(ctx context.Context, c *Cluster) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		// A linearizable write through any member moves everyone to a revision all will reach.
		up := c.Up()
		if n := len(c.Members()); len(up) != n {
			return 0, fmt.Errorf("%d of %d members running", len(up), n)
		}
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := up[0].Server().Put(wctx, &pb.PutRequest{Key: []byte("settle"), Value: []byte("x")})
		wcancel()
		if err == nil {
			// The write is applied at the proposer's applied index: every member that has
			// applied as far holds its revision.
			if appliedEverywhere(ctx, c, up[0].Server().AppliedIndex(), 10*time.Second) {
				return resp.Header.Revision, nil
			}
		}
		pause(ctx, retryBackoff)
		if ctx.Err() != nil {
			return 0, errors.Join(errors.New("the cluster did not settle"), err)
		}
	}
}

// retryBackoff is the harness's wait between two attempts at what may not succeed yet (a join,
// a promotion, a membership change, settling), as an operator retries.
const retryBackoff = 100 * time.Millisecond

// pause waits d, or less if ctx ends. The harness waits on time only for the schedule's own
// moments (a fault's, the quiet after the faults, a lease's expiry) and between retries; a
// state that an event tells of (a member up, a slot refilled, an index applied) it waits on.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// appliedEverywhere waits, up to bound, until every member has applied raft index index.
func appliedEverywhere(ctx context.Context, c *Cluster, index uint64, bound time.Duration) bool {
	t := time.NewTimer(bound)
	defer t.Stop()
	for _, m := range c.Members() {
		s := m.Server()
		if s == nil {
			return false
		}
		select {
		case <-s.AppliedNotify(index):
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// storeHistory reads every event from revision 1 to final from a store, by revision.
func storeHistory(kv *mvcc.Store, final int64) (map[int64][]Event, error) {
	ws := kv.NewWatchStream()
	defer ws.Close()
	if _, err := ws.Watch(0, []byte{0}, []byte{0xff}, 1); err != nil {
		return nil, err
	}
	out := map[int64][]Event{}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-ws.Chan():
			for _, ev := range r.Events {
				e := eventOf(ev)
				out[e.Rev] = append(out[e.Rev], e)
				if e.Rev >= final {
					return out, nil
				}
			}
		case <-timeout:
			return nil, fmt.Errorf("the store's history stopped before revision %d", final)
		}
	}
}

// divergeNewest gives the newest record of the key bucket another value, in place (the planted
// bug of Options.Diverge).
func divergeNewest(be *backend.Backend) error {
	b := be.Batch()
	tx, err := b.Tx()
	if err != nil {
		b.Unlock()
		return err
	}
	k, v := tx.Bucket(schema.Key).Cursor().Last()
	if k == nil {
		b.Unlock()
		return errors.New("no record to change")
	}
	var kv mvccpb.KeyValue
	if err := kv.Unmarshal(v); err != nil {
		b.Unlock()
		return err
	}
	kv.Value = append(kv.Value, "-diverged"...)
	nv, err := kv.Marshal()
	if err == nil {
		err = b.Put(schema.Key, append([]byte(nil), k...), nv)
	}
	if uerr := b.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return err
	}
	return be.Commit()
}
