package sim

import (
	"context"
	"time"
)

// changes is a channel that receives at the cluster's next change: a member started or stopped, or any
// running member became ready, saw its leader change or applied entries.
func changes(ctx context.Context, c *Cluster) <-chan struct{} {
	chans := []<-chan struct{}{c.Changed()}
	for _, m := range c.Up() {
		if s := m.Server(); s != nil {
			// Its next leader change, its next entry applied, its stop.
			chans = append(chans, s.LeaderChanged(), s.AppliedNotify(s.AppliedIndex()+1), s.Done())
			select {
			case <-s.ReadyNotify():
			default:
				chans = append(chans, s.ReadyNotify()) // becoming ready is a change too
			}
		}
	}
	woke := make(chan struct{})
	for _, ch := range chans {
		go func() {
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
			select {
			case woke <- struct{}{}:
			case <-ctx.Done():
			}
		}()
	}
	return woke
}

// waitUntil waits for ok to hold, checking it at each change of the cluster; false when ctx
// ends first.
func waitUntil(ctx context.Context, c *Cluster, ok func() bool) bool {
	for {
		wctx, cancel := context.WithCancel(ctx)
		changed := changes(wctx, c) // before the check: a change during it wakes the wait
		if ok() {
			cancel()
			return true
		}
		select {
		case <-changed:
			cancel()
		case <-ctx.Done():
			cancel()
			return false
		}
	}
}

// quiet waits until report has stayed the same for calm, reading it again at each change of
// the cluster, and returns it; false when ctx ends first. It subscribes before each reading (a
// change while reading wakes the wait) and reads once more when calm has passed, since a
// member may publish an applied index a moment before what the report shows of it.
func quiet(ctx context.Context, c *Cluster, calm time.Duration, report func() string) (string, bool) {
	var last string
	var since time.Time
	for {
		wctx, cancel := context.WithCancel(ctx)
		changed := changes(wctx, c)
		if r := report(); since.IsZero() || r != last {
			last, since = r, time.Now()
		}
		timer := time.NewTimer(calm - time.Since(since))
		select {
		case <-changed:
		case <-timer.C:
			if report() == last {
				cancel()
				return last, true
			}
		case <-ctx.Done():
		}
		cancel()
		timer.Stop()
		if ctx.Err() != nil {
			return last, false
		}
	}
}
