package sim

import (
	"context"
	"etcdx/pkg/judge"
	"etcdx/server/failpoint"
	"etcdx/server/version"
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// virtualThink is a register client's pause between operations in virtual time (Options.Think).
const virtualThink = 2 * time.Millisecond

// The campaign: SIM_SEEDS seeds from SIM_FIRST_SEED (make sim SEEDS=N), or the one seed
// SIM_SEED (what a failure prints to replay it). make test runs a short campaign.
var verbose = flag.Bool("sim.v", false, "print each run's schedule")

func TestSimulation(t *testing.T) {
	seeds := []int64{1, 2}
	if s := os.Getenv("SIM_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("SIM_SEED=%q: %v", s, err)
		}
		seeds = []int64{n}
	} else if s := os.Getenv("SIM_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SIM_SEEDS=%q: want a positive count", s)
		}
		first := int64(1)
		if f := os.Getenv("SIM_FIRST_SEED"); f != "" {
			if first, err = strconv.ParseInt(f, 10, 64); err != nil {
				t.Fatalf("SIM_FIRST_SEED=%q: %v", f, err)
			}
		}
		seeds = seeds[:0]
		for i := 0; i < n; i++ {
			seeds = append(seeds, first+int64(i))
		}
	}
	// SIM_VIRTUAL=1 (make sim VIRTUAL=1) runs each seed in virtual time (testing/synctest): a
	// seed in a fraction of a second, with different interleavings from the wall clock's.
	virtual := os.Getenv("SIM_VIRTUAL") == "1"
	failed := 0
	for _, seed := range seeds {
		// Each run's data dirs stay when it fails, for a post-mortem (etcdutl check, hashkv).
		dir, err := os.MkdirTemp("", fmt.Sprintf("sim-seed%d-", seed))
		if err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(dir + "/members.log")
		if err != nil {
			t.Fatal(err)
		}
		var res *Result
		if virtual {
			// The run in a synctest bubble: every timer, ticker and sleep of the members and the
			// harness on the bubble's clock, which moves only while every goroutine waits.
			synctest.Test(t, func(*testing.T) {
				res, err = Run(context.Background(), seed, Options{Dir: dir, Log: logf, Think: virtualThink})
			})
		} else {
			res, err = Run(context.Background(), seed, Options{Dir: dir, Log: logf})
		}
		logf.Close()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !res.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("seed %d: the members' data dirs are kept in %s", seed, dir)
		}
		if *verbose || res.Failed() {
			for _, a := range res.Schedule {
				t.Logf("seed %d: %v", seed, a)
			}
		}
		t.Logf("seed %d: %s; lifecycle: %s", seed, res.Path, strings.Join(res.Lifecycle, "; "))
		t.Logf("seed %d: %d operations, %d acknowledged ledger writes, %d watch events, %d leases expired, %d faults scheduled, %d failpoint delays set", seed, res.Ops, res.Acked, res.WatchEvents, res.LeasesExpired, len(res.Schedule), res.Delays)
		delays := 0
		for _, a := range res.Schedule {
			if a.Kind == "delay" {
				delays++
			}
		}
		if failpoint.Enabled && res.Delays != delays {
			t.Errorf("seed %d: %d of %d failpoint delays took effect in a failpoints build", seed, res.Delays, delays)
		}
		if res.Ops < 50 || res.Acked < 10 || res.WatchEvents < res.Acked || res.LeasesExpired == 0 {
			t.Errorf("seed %d: too little got through (%d operations, %d writes, %d watch events, %d leases expired): the run proves nothing", seed, res.Ops, res.Acked, res.WatchEvents, res.LeasesExpired)
		}
		if res.Failed() {
			failed++
			replay := fmt.Sprintf("SIM_SEED=%d", seed)
			if virtual {
				replay += " SIM_VIRTUAL=1"
			}
			t.Errorf("seed %d FAILED:\n  %s\nreplay: cd server && %s go test -run TestSimulation -v ./sim", seed, strings.Join(res.Failures, "\n  "), replay)
		}
	}
	t.Logf("%d seeds, %d failed", len(seeds), failed)
}

// TestScheduleIsTheSeeds: a seed always draws the same schedule, and different seeds differ.
func TestScheduleIsTheSeeds(t *testing.T) {
	a, b := Schedule(7, Options{}), Schedule(7, Options{})
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("schedules of seed 7: %d and %d actions", len(a), len(b))
	}
	for i := range a {
		if a[i].String() != b[i].String() {
			t.Fatalf("seed 7 drew %v then %v", a[i], b[i])
		}
	}
	if joined(Schedule(8, Options{})) == joined(a) {
		t.Fatal("seeds 7 and 8 drew the same schedule")
	}
}

func joined(as []Action) string {
	var s []string
	for _, a := range as {
		s = append(s, a.String())
	}
	return strings.Join(s, ";")
}

// The simulation's own checks fail when they should: recorded histories with a stale read and a
// revision going back (the checks it shares with the lab, pkg/judge's, have their planted faults
// beside them).
func TestChecksCatchPlantedBugs(t *testing.T) {
	ms := int64(time.Millisecond)
	t.Run("stale read", func(t *testing.T) {
		ok := []Op{
			{Client: 0, Key: "k", Write: true, Value: "1", Call: 0, Return: 1 * ms},
			{Client: 1, Key: "k", Value: "1", Call: 2 * ms, Return: 3 * ms},
		}
		if err := CheckLinearizable(ok, time.Second); err != nil {
			t.Fatalf("a correct history: %v", err)
		}
		stale := append(ok, Op{Client: 0, Key: "k", Write: true, Value: "2", Call: 4 * ms, Return: 5 * ms},
			Op{Client: 1, Key: "k", Value: "1", Call: 6 * ms, Return: 7 * ms})
		if CheckLinearizable(stale, time.Second) == nil {
			t.Fatal("a read of 1 after the write of 2 returned passed")
		}
		unknown := append(ok, Op{Client: 0, Key: "k", Write: true, Value: "2", Call: 4 * ms, Return: math.MaxInt64},
			Op{Client: 1, Key: "k", Value: "1", Call: 6 * ms, Return: 7 * ms})
		if err := CheckLinearizable(unknown, time.Second); err != nil {
			t.Fatalf("a write of unknown outcome may take effect later: %v", err)
		}
	})
	t.Run("revision going back", func(t *testing.T) {
		ops := []Op{{Client: 0, Key: "k", Value: "1", Call: 0, Return: ms, Rev: 5}, {Client: 0, Key: "k", Value: "1", Call: 2 * ms, Return: 3 * ms, Rev: 4}}
		if got := judge.Fired(CheckRevisions(ops)); len(got) != 1 || got[0] != judge.RevisionWentBack {
			t.Fatalf("revision 4 after 5: fired %v", got)
		}
		if fs := CheckRevisions(ops[:1]); len(fs) != 0 {
			t.Fatal(judge.Strings(fs))
		}
	})
}

// TestLeaseCheckCatchesAClockRunningAhead plants a bug through the harness's clock seam: every
// member's lease clock jumps 10 s ahead, again and again, so leases alive at a jump expire long
// before their TTL since the last keep-alive. The lease check must say so.
func TestLeaseCheckCatchesAClockRunningAhead(t *testing.T) {
	res, err := Run(context.Background(), 11, Options{Dir: t.TempDir(), JumpClocks: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	early := 0
	for _, f := range res.Failures {
		if strings.Contains(f, string(judge.LeaseExpiredEarly)) {
			early++
		}
	}
	if early == 0 {
		t.Fatalf("leases expired by a clock 10 s ahead went unnoticed (%d leases judged); failures: %v", res.LeasesExpired, res.Failures)
	}
	t.Logf("caught %d leases expiring early", early)
}

// TestChecksCatchALyingDisk plants a bug through the harness's disk seam: every member's WAL disk
// acknowledges syncs and drops the data, and every member loses power at once. Acknowledged
// writes are then gone from every WAL: the run must fail, and say which seed replays it.
func TestChecksCatchALyingDisk(t *testing.T) {
	res, err := Run(context.Background(), 21, Options{Dir: t.TempDir(), LyingDisks: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed() {
		t.Fatalf("a cluster whose disks dropped every acknowledged append passed (%d writes acknowledged)", res.Acked)
	}
	// The members' start-up check refuses a data dir whose database is ahead of its WAL: what a
	// disk that drops acknowledged appends leaves.
	if !slices.Contains(judge.Fired(res.Findings), judge.MemberStartRefused) {
		t.Fatalf("a lying disk, but no member refused its data dir: %v", res.Failures)
	}
	t.Logf("caught (seed %d): %s", res.Seed, strings.Join(res.Failures, "; "))
}

// TestChecksCatchAStarvedLearner: a member replaced by a learner that gets no message can never
// catch up; the run must say the learner could not be promoted (judge.LearnerNotPromotable).
func TestChecksCatchAStarvedLearner(t *testing.T) {
	// Every member at the newest level: the version lifecycle's steps would only wait on the
	// starved member.
	res, err := Run(context.Background(), 5, Options{Dir: t.TempDir(), StarveLearners: true, Path: &Path{From: version.V3_7, To: version.V3_7}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(judge.Fired(res.Findings), judge.LearnerNotPromotable) {
		t.Fatalf("a starved learner went unnoticed (lifecycle %v); failures: %v", res.Lifecycle, res.Failures)
	}
	t.Logf("caught (seed %d): %s", res.Seed, strings.Join(res.Failures, "; "))
}

// TestChecksCatchADivergedMember plants a divergence in a real run: once the cluster has settled,
// one member's newest stored record gets another value in its database (revisions unchanged, as
// a disk fault leaves them). Only the hash check can see it, and it must
// (judge.HashMismatch). In virtual time: the run takes a second.
func TestChecksCatchADivergedMember(t *testing.T) {
	var res *Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = Run(context.Background(), 7, Options{Dir: t.TempDir(), Diverge: true, Think: virtualThink})
		if err != nil {
			t.Fatal(err)
		}
	})
	if got := judge.Fired(res.Findings); !reflect.DeepEqual(got, []judge.Check{judge.HashMismatch}) {
		t.Fatalf("a diverged member: checks fired %v, want only %s; failures: %v", got, judge.HashMismatch, res.Failures)
	}
	t.Logf("caught (seed %d): %s", res.Seed, strings.Join(res.Failures, "; "))
}
