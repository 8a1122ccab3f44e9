package lease

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"etcdx/server/backend"
	"etcdx/server/schema"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newLessor(t *testing.T) (*Lessor, *backend.Backend, *fakeClock) {
	t.Helper()
	be, err := backend.Open(backend.Config{Path: filepath.Join(t.TempDir(), "db"), Buckets: schema.Buckets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	clock := &fakeClock{now: time.Unix(1000, 0)}
	l, err := New(be, 2, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return l, be, clock
}

func grant(t *testing.T, l *Lessor, be *backend.Backend, id, ttl int64) {
	t.Helper()
	b := be.Batch()
	if _, err := l.Grant(b, id, ttl); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// TestExpiryFollowsTheClock: a lease expires on the leader's clock, TTL after its grant or last
// renewal, never on a follower, and a grant gets at least the minimum TTL.
func TestExpiryFollowsTheClock(t *testing.T) {
	l, be, clock := newLessor(t)
	grant(t, l, be, 1, 5)
	grant(t, l, be, 2, 1) // raised to the minimum, 2
	if got := l.Expired(10); len(got) != 0 {
		t.Fatalf("a follower judged expiry: %v", got)
	}
	l.Promote(0)
	for _, step := range []struct {
		advance time.Duration
		renew   int64
		want    []int64
	}{
		{1 * time.Second, 0, nil},
		{1 * time.Second, 1, []int64{2}}, // lease 2 at its (raised) TTL; lease 1 renewed at 2 s
		{5 * time.Second, 0, []int64{1, 2}},
	} {
		clock.Add(step.advance)
		if step.renew != 0 {
			if _, _, err := l.Renew(context.Background(), step.renew); err != nil {
				t.Fatal(err)
			}
		}
		got := l.Expired(10)
		if len(got) != len(step.want) {
			t.Fatalf("after %v: expired %v, want %v", step.advance, got, step.want)
		}
	}
}

// TestRenewOfAnExpiredLease: a keep-alive after the lease expired does not bring it back, as
// upstream's does not: it waits for the revocation and answers not found, or not primary when
// this member stops leading first.
func TestRenewOfAnExpiredLease(t *testing.T) {
	l, be, clock := newLessor(t)
	grant(t, l, be, 1, 2)
	grant(t, l, be, 2, 2)
	l.Promote(0)
	clock.Add(3 * time.Second)

	done := make(chan error, 1)
	go func() { _, _, err := l.Renew(context.Background(), 1); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("the keep-alive of an expired lease returned before its revocation: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	b := be.Batch()
	if err := l.Forget(1, b); err != nil {
		t.Fatal(err)
	}
	b.Unlock()
	if err := <-done; !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the revocation: %v, want ErrNotFound", err)
	}

	go func() { _, _, err := l.Renew(context.Background(), 2); done <- err }()
	l.Demote()
	if err := <-done; !errors.Is(err, ErrNotPrimary) {
		t.Fatalf("after losing leadership: %v, want ErrNotPrimary", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	l.Promote(0)
	clock.Add(3 * time.Second)
	go func() { _, _, err := l.Renew(ctx, 2); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("after the caller gave up: %v", err)
	}
}

// TestPromoteCarriesCheckpoints: a new leader starts each lease from its checkpointed remaining
// TTL (plus the extension), not from a fresh TTL.
func TestPromoteCarriesCheckpoints(t *testing.T) {
	l, be, clock := newLessor(t)
	grant(t, l, be, 1, 60)
	b := be.Batch()
	if err := l.Checkpoint(b, 1, 10); err != nil {
		t.Fatal(err)
	}
	b.Unlock()
	l.Promote(time.Second)
	clock.Add(10 * time.Second)
	if got := l.Expired(10); len(got) != 0 {
		t.Fatalf("expired within the extension: %v", got)
	}
	clock.Add(1 * time.Second)
	if got := l.Expired(10); len(got) != 1 {
		t.Fatalf("a checkpointed lease outlived its remaining TTL: %v", got)
	}
}

// The checkpoint round's leases, with a 5 s interval: only those that have run down, and only
// those longer than the interval (upstream schedules a checkpoint only while a lease's
// remaining TTL exceeds it: a shorter one expires before its checkpoint would be due).
func TestRemainingTakesLeasesLongerThanTheInterval(t *testing.T) {
	l, be, clock := newLessor(t)
	grant(t, l, be, 1, 60) // long, runs down
	grant(t, l, be, 2, 5)  // as long as the interval: never checkpointed
	grant(t, l, be, 3, 6)  // just longer
	if got := l.Remaining(5 * time.Second); got != nil {
		t.Fatalf("a follower's round: %v", got)
	}
	l.Promote(0)
	if got := l.Remaining(5 * time.Second); len(got) != 0 {
		t.Fatalf("nothing has run down yet: %v", got)
	}
	clock.Add(2 * time.Second)
	got := l.Remaining(5 * time.Second)
	if len(got) != 2 || got[1] != 58 || got[3] != 4 {
		t.Fatalf("after 2 s: %v, want lease 1 at 58 and 3 at 4 (not 2, no longer than the interval)", got)
	}
	if got := l.Remaining(0); len(got) != 3 || got[2] != 3 {
		t.Fatalf("with no interval every lease that ran down: %v", got)
	}
}
