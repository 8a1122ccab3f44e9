package e2e

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestRollingRestartUnderLoad(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	cl := c.Client()

	stop := make(chan struct{})
	done := make(chan map[string]string)
	go func() { done <- writeAcked(t, cl, "roll", 8, 1000000, stop) }()

	// Linearizable readers: the revision they observe never goes backwards.
	var reads, readErrs atomic.Int64
	var backwards atomic.Int64
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				resp, err := cl.Get(ctx, "roll/", clientv3.WithPrefix(), clientv3.WithCountOnly())
				cancel()
				if err != nil {
					readErrs.Add(1)
					continue
				}
				reads.Add(1)
				if resp.Header.Revision < last {
					backwards.Add(1)
				}
				last = resp.Header.Revision
			}
		}()
	}

	for _, m := range c.Members {
		time.Sleep(700 * time.Millisecond)
		if err := m.Stop(); err != nil {
			t.Fatalf("SIGTERM %s: %v\n%s", m.Name, err, m.LogTail(10))
		}
		if code, _ := m.Wait(time.Second); code != 0 {
			t.Fatalf("%s exited %d after SIGTERM", m.Name, code)
		}
		m.Start()
	}
	time.Sleep(700 * time.Millisecond)
	close(stop)
	acked := <-done
	wg.Wait()
	if backwards.Load() > 0 {
		t.Fatalf("%d linearizable reads saw an older revision than an earlier read", backwards.Load())
	}
	if len(acked) < 500 || reads.Load() < 100 {
		t.Fatalf("too little load to prove anything: %d writes, %d reads", len(acked), reads.Load())
	}
	for _, m := range c.Members {
		deadline := time.Now().Add(15 * time.Second)
		for {
			r, err := m.Client().Get(Ctx(t), "roll/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithSerializable())
			if err == nil && r.Count >= int64(len(acked)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not catch up", m.Name)
			}
			time.Sleep(100 * time.Millisecond)
		}
		checkAcked(t, m.Client(), "roll", acked)
	}
	t.Logf("rolling restart: %d acknowledged writes kept on every member; %d reads (%d failed)", len(acked), reads.Load(), readErrs.Load())
}

func TestMoveLeader(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	lead := c.Leader(10 * time.Second)
	var target *Member
	for _, m := range c.Members {
		if m != lead {
			target = m
		}
	}
	ctx := Ctx(t)
	tst, _ := target.Client().Status(ctx, target.ClientURL)
	if _, err := target.Client().MoveLeader(ctx, tst.Header.MemberId); !errors.Is(err, rpctypes.ErrNotLeader) {
		t.Fatalf("move-leader sent to a follower: %v", err)
	}
	if _, err := lead.Client().MoveLeader(ctx, 12345); !errors.Is(err, rpctypes.ErrBadLeaderTransferee) {
		t.Fatalf("move-leader to a stranger: %v", err)
	}
	if _, err := lead.Client().MoveLeader(ctx, tst.Header.MemberId); err != nil {
		t.Fatal(err)
	}
	if now := c.Leader(5 * time.Second); now != target {
		t.Fatalf("leader is %s, want %s", now.Name, target.Name)
	}
	// SIGTERM on the leader hands leadership over before it goes.
	if err := target.Stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(target.Log(), "leadership transferred") {
		t.Fatalf("the stopping leader did not hand over\n%s", target.LogTail(10))
	}
}
