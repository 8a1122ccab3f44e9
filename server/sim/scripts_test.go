package sim

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/datadriven"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/version"
)

// The version lifecycle as executable documentation: each file in testdata/lifecycle is a
// script of operator steps on a simulated cluster (the real members on the in-memory network),
// and after each step what every member reports once the cluster has settled. go test
// -run TestLifecycleScripts -rewrite rewrites the reports.
//
// Steps:
//
//	start size=N level=L         a new cluster of N members at level L
//	swap NAME level=L            the member's binary replaced in place by level L's
//	downgrade enable=L           Maintenance.Downgrade through a running member (validate=L, cancel)
//	replace NAME                 member remove, member add --learner, the new member started
//	                             (at the level the cluster takes) and promoted once caught up
//	stop NAME, restart NAME      a graceful stop; a start on its data
//	crash NAME, powercut         a member's power cut (every member's), unsynced writes lost;
//	                             after a power cut every member starts again
//
// settle=false on a step goes on at once instead of waiting for the cluster to settle (the
// next step then lands in the middle of what this one started), and reports nothing.
func TestLifecycleScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/lifecycle", func(t *testing.T, path string) {
		synctest.Test(t, func(t *testing.T) {
			s := &script{t: t, dir: t.TempDir(), rng: rand.New(rand.NewSource(1))}
			defer s.close()
			datadriven.RunTest(t, path, s.step)
		})
	})
}

type script struct {
	t   *testing.T
	dir string
	c   *Cluster
	rng *rand.Rand // where a torn write-back stops (none tear here: the rng only satisfies Crash)
}

func (s *script) close() {
	if s.c != nil {
		s.c.Close()
	}
}

func (s *script) step(t *testing.T, d *datadriven.TestData) string {
	ctx := context.Background()
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	member := func() *Member {
		if len(d.CmdArgs) == 0 {
			d.Fatalf(t, "%s needs a member name", d.Cmd)
		}
		for _, m := range s.c.Members() {
			if m.Name == d.CmdArgs[0].Key {
				return m
			}
		}
		d.Fatalf(t, "no member %s", d.CmdArgs[0].Key)
		return nil
	}
	level := func() version.Level {
		var l string
		d.ScanArgs(t, "level", &l)
		lv, err := version.ParseLevel(l)
		if err != nil {
			d.Fatalf(t, "level %q: %v", l, err)
		}
		return lv
	}
	switch d.Cmd {
	case "start":
		var size int
		d.ScanArgs(t, "size", &size)
		startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		c, err := NewCluster(startCtx, NewNetwork(rand.New(rand.NewSource(2)), Faults{}), ClusterConfig{Size: size, Dir: s.dir, Level: level(), Log: s.log()})
		cancel()
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		s.c = c
	case "swap":
		if err := s.c.Swap(member(), level()); err != nil {
			say("refused: %v", err)
		}
	case "downgrade":
		up := s.c.Up()
		if len(up) == 0 {
			d.Fatalf(t, "no member is up")
		}
		req := &pb.DowngradeRequest{}
		switch a := d.CmdArgs[0]; a.Key {
		case "enable":
			req.Action, req.Version = pb.DowngradeRequest_ENABLE, a.Vals[0]
		case "validate":
			req.Action, req.Version = pb.DowngradeRequest_VALIDATE, a.Vals[0]
		case "cancel":
			req.Action = pb.DowngradeRequest_CANCEL
		default:
			d.Fatalf(t, "downgrade %s?", a.Key)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := up[0].Server().Downgrade(rctx, req)
		cancel()
		if err != nil {
			say("downgrade %s: %v", d.CmdArgs[0].Key, err)
		} else {
			say("downgrade %s: ok (cluster version %s)", d.CmdArgs[0].Key, resp.Version)
		}
	case "replace":
		old := member()
		slot := -1
		for i, m := range s.c.Members() {
			if m == old {
				slot = i
			}
		}
		nm, err := s.c.Replace(ctx, slot)
		if err != nil || nm == nil {
			d.Fatalf(t, "replace %s: %v", old.Name, err)
		}
		if err := s.c.Join(nm); err != nil {
			d.Fatalf(t, "start %s: %v", nm.Name, err)
		}
		say("%s replaced by %s, started as %s", old.Name, nm.Name, nm.Level())
		pctx, pcancel := context.WithTimeout(ctx, memberChangeBound)
		if !waitUntil(pctx, s.c, func() bool { return s.c.Promote(pctx, nm) }) {
			say("%s not promoted within %v", nm.Name, memberChangeBound)
		}
		pcancel()
	case "stop":
		s.c.Stop(member())
	case "restart":
		if err := s.c.Restart(member()); err != nil {
			say("refused: %v", err)
		}
	case "crash":
		s.c.Crash(member())
	case "powercut":
		for _, m := range s.c.Members() {
			m.Disk.PowerOff()
		}
		for _, m := range s.c.Members() {
			s.c.Stop(m)
		}
		for _, m := range s.c.Members() {
			if err := s.c.Restart(m); err != nil {
				say("%s refused to start: %v", m.Name, err)
			}
		}
	default:
		d.Fatalf(t, "unknown step %s", d.Cmd)
	}
	if d.HasArg("settle") {
		// What the members say at this instant depends on timing: nothing is reported.
		return strings.Join(append(out, "(not settled)"), "\n") + "\n"
	}
	return strings.Join(append(out, s.settled(t, d)), "\n") + "\n"
}

// settled waits until the report stays the same for two seconds (the leader decides versions
// every second), reading it at each change of the cluster, within a bound, and returns it.
func (s *script) settled(t *testing.T, d *datadriven.TestData) string {
	const bound, calm = 30 * time.Second, 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	r, ok := quiet(ctx, s.c, calm, s.report)
	if !ok {
		d.Fatalf(t, "the cluster did not settle within %v; last:\n%s", bound, r)
	}
	return r
}

// report is what every member says of itself: its level, its role in the membership a running
// member knows, the cluster and storage versions it holds, and the downgrade it knows of.
func (s *script) report() string {
	learner := map[uint64]bool{}
	for _, m := range s.c.Up() {
		if srv := m.Server(); srv != nil {
			for _, x := range srv.Members() {
				learner[x.ID] = x.IsLearner
			}
			break
		}
	}
	var lines []string
	for _, m := range s.c.Members() {
		srv := m.Server()
		if srv == nil {
			lines = append(lines, fmt.Sprintf("%s %s down", m.Name, m.Level()))
			continue
		}
		role := "voter"
		if learner[s.c.IDOf(m)] {
			role = "learner"
		}
		cv, sv := srv.Versions()
		line := fmt.Sprintf("%s %s %s cluster=%s storage=%s", m.Name, m.Level(), role, orDash(cv), orDash(sv))
		if dg := srv.DowngradeInfo(); dg.Enabled {
			line += " downgrade=" + dg.TargetVersion
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

func orDash(l version.Level) string {
	if l.IsZero() {
		return "-"
	}
	return l.String()
}

// log is where the members log: a file in the script's directory, for a failed step's
// post-mortem.
func (s *script) log() *os.File {
	f, err := os.Create(s.dir + "/members.log")
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { f.Close() })
	return f
}
