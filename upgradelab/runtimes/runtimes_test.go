package runtimes

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"etcdx/upgradelab/plan"
)

func TestLessVersion(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"1.40", "1.41", true}, {"1.41", "1.41", false}, {"1.44", "1.41", false}, {"1.9", "1.41", true}, {"0.99", "1.0", true},
	} {
		if got := lessVersion(c.a, c.b); got != c.less {
			t.Errorf("lessVersion(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// Which plan steps each runtime refuses, before a plan starts.
func TestSupports(t *testing.T) {
	loopback, docker := NewProcess(t.TempDir()), &Docker{}
	for _, c := range []struct {
		r  interface{ Supports(plan.StepKind) error }
		k  plan.StepKind
		ok bool
	}{
		{loopback, plan.KindPartition, false}, {loopback, plan.KindHeal, false}, {loopback, plan.KindCrash, true},
		{docker, plan.KindCrash, false}, {docker, plan.KindPartition, true},
	} {
		if err := c.r.Supports(c.k); (err == nil) != c.ok {
			t.Errorf("%T %s: %v", c.r, c.k, err)
		}
	}
}

// The owner label tells this lab process from a dead one, even one whose pid was reused.
func TestOwnerAlive(t *testing.T) {
	me, err := ownerID()
	if err != nil {
		t.Fatal(err)
	}
	if !ownerAlive(me) {
		t.Fatalf("this process (%s) reads as dead", me)
	}
	host, _ := os.Hostname()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	for _, owner := range []string{
		fmt.Sprintf("%s/%d/1", host, os.Getpid()), // this pid, another start time: a reused pid
		fmt.Sprintf("%s/%d/1", host, cmd.Process.Pid),
		"not an owner",
	} {
		if ownerAlive(owner) {
			t.Errorf("%q reads as alive", owner)
		}
	}
	if !ownerAlive("another-host/1/1") {
		t.Error("an owner on another host must count as alive: only that host can tell")
	}
}
