package etcdserver

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestHandoverGate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	abandon := time.Second
	tests := []struct {
		name  string
		setup func(g *handoverGate)
		at    time.Time
		steps bool
	}{
		{"no transfer ever", func(g *handoverGate) {}, t0, true},
		{"transfer in flight", func(g *handoverGate) { g.begin() }, t0, false},
		{"transfer ended, raft may still hold it", func(g *handoverGate) { g.begin(); g.end(t0, abandon) }, t0.Add(abandon - time.Millisecond), false},
		{"transfer ended an election timeout ago", func(g *handoverGate) { g.begin(); g.end(t0, abandon) }, t0.Add(abandon), true},
		{"one of two transfers ended", func(g *handoverGate) { g.begin(); g.begin(); g.end(t0, abandon) }, t0.Add(time.Hour), false},
		{"the later end counts", func(g *handoverGate) {
			g.begin()
			g.begin()
			g.end(t0.Add(5*time.Second), abandon)
			g.end(t0, abandon)
		}, t0.Add(5*time.Second + abandon/2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g handoverGate
			tt.setup(&g)
			ran := false
			got := g.stepIfSteady(tt.at, func(context.Context) { ran = true })
			if got != tt.steps || ran != tt.steps {
				t.Fatalf("stepIfSteady = %v (step ran %v), want %v", got, ran, tt.steps)
			}
		})
	}
}

// A transfer's begin waits for a step already under way: once begin returns, raft has taken the
// stepped message, so it is processed before the transfer.
func TestHandoverGateBeginWaitsForAStepUnderWay(t *testing.T) {
	var g handoverGate
	stepping, release := make(chan struct{}), make(chan struct{})
	stepped := make(chan bool, 1)
	go func() {
		stepped <- g.stepIfSteady(time.Now(), func(context.Context) {
			close(stepping)
			<-release
		})
	}()
	<-stepping
	begun := make(chan struct{})
	go func() { g.begin(); close(begun) }()
	select {
	case <-begun:
		t.Fatal("begin returned while a step was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-begun
	if !<-stepped {
		t.Fatal("the step under way did not run")
	}
	if g.stepIfSteady(time.Now(), func(context.Context) {}) {
		t.Fatal("a step after begin ran")
	}
}

// A step waiting for raft to take its message (raft takes none while it knows no leader) is
// cancelled by a transfer's begin rather than holding the transfer up for its whole timeout; in a
// bubble, where the clock moves only when every goroutine waits durably, a begin blocked on a lock
// held across that wait stopped the clock for good (the virtual-time campaign's seed 244).
func TestHandoverGateBeginCancelsAStepWaitingForRaft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g handoverGate
		stepping := make(chan struct{})
		stepErr := make(chan error, 1)
		go func() {
			g.stepIfSteady(time.Now(), func(steps context.Context) {
				ctx, cancel := context.WithTimeout(steps, time.Hour)
				defer cancel()
				close(stepping)
				<-ctx.Done()
				stepErr <- ctx.Err()
			})
		}()
		<-stepping
		start := time.Now()
		g.begin()
		if err := <-stepErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("the step under way ended with %v, want it cancelled", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("begin waited %v for the step under way, want no wait", waited)
		}
		g.end(time.Now(), time.Second)
		// Steps after the transfer's aftermath get a live context again.
		var live bool
		g.stepIfSteady(time.Now().Add(time.Second), func(ctx context.Context) { live = ctx.Err() == nil })
		if !live {
			t.Fatal("a step after the transfer was over got a cancelled context")
		}
	})
}
