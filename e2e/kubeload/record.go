package kubeload

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Class is what an SLO judges a request by.
type Class int

const (
	Mutating Class = iota // creates, updates, deletes, event writes, lease renewals
	Read                  // reads of one object
	List                  // full LISTs of pods (one per cache refill)
	Delivery              // a watch event's delay from its write to its watcher
	classes
)

var classNames = [...]string{"mutating", "single-object read", "full pod list", "watch delivery"}

func (c Class) String() string { return classNames[c] }

// Summary is one class's figures in a window.
type Summary struct {
	Count         int
	P50, P99, Max time.Duration
}

func (s Summary) String() string {
	if s.Count == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, p50 %v p99 %v max %v", s.Count, s.P50.Round(time.Millisecond), s.P99.Round(time.Millisecond), s.Max.Round(time.Millisecond))
}

// recorder keeps every latency of the current window, and the failures.
type recorder struct {
	mu       sync.Mutex
	lat      [classes][]time.Duration
	sent     int64
	failed   int64
	firstErr []string
}

func (r *recorder) ok(c Class, d time.Duration) {
	r.mu.Lock()
	r.lat[c] = append(r.lat[c], d)
	if c != Delivery {
		r.sent++
	}
	r.mu.Unlock()
}

func (r *recorder) fail(what string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent++
	r.failed++
	if len(r.firstErr) < 5 {
		r.firstErr = append(r.firstErr, fmt.Sprintf("%s: %v", what, err))
	}
}

// take ends the window: its figures, and an empty recorder for the next.
func (r *recorder) take() (sums [classes]Summary, sent, failed int64, errs []string) {
	r.mu.Lock()
	lat := r.lat
	sent, failed, errs = r.sent, r.failed, r.firstErr
	r.lat = [classes][]time.Duration{}
	r.sent, r.failed, r.firstErr = 0, 0, nil
	r.mu.Unlock()
	for c, xs := range lat {
		sums[c] = summarize(xs)
	}
	return sums, sent, failed, errs
}

func summarize(xs []time.Duration) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	return Summary{Count: len(xs), P50: xs[len(xs)/2], P99: xs[(len(xs)*99)/100], Max: xs[len(xs)-1]}
}

// Result is one measured window at one N.
type Result struct {
	Nodes   int
	Window  time.Duration
	Classes [classes]Summary
	Sent    int64 // requests sent (watch events not counted)
	Failed  int64
	Errors  []string // the first failures
}

// SLO is Kubernetes' scalability SLOs, as the bench judges a window by them.
type SLO struct {
	Mutating, Read, List, Delivery time.Duration
}

// KubernetesSLO is upstream Kubernetes' scalability SLOs: p99 of mutating calls and of
// single-object reads within 1 s, of a LIST of every pod within 30 s, and watch events
// delivered within 5 s (the bench's reading of the watch latency SLO); no request fails.
var KubernetesSLO = SLO{Mutating: time.Second, Read: time.Second, List: 30 * time.Second, Delivery: 5 * time.Second}

// Holds says whether r meets the SLOs, and if not which it misses.
func (r Result) Holds(s SLO) (bool, string) {
	var missed []string
	limits := [classes]time.Duration{s.Mutating, s.Read, s.List, s.Delivery}
	for c, lim := range limits {
		if r.Classes[c].Count > 0 && r.Classes[c].P99 > lim {
			missed = append(missed, fmt.Sprintf("%s p99 %v > %v", Class(c), r.Classes[c].P99.Round(time.Millisecond), lim))
		}
	}
	if r.Classes[Mutating].Count == 0 {
		missed = append(missed, "no mutating request completed")
	}
	if r.Failed > 0 {
		missed = append(missed, fmt.Sprintf("%d failed requests (%s)", r.Failed, strings.Join(r.Errors, "; ")))
	}
	return len(missed) == 0, strings.Join(missed, ", ")
}
