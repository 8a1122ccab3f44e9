package lab

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"etcdx/pkg/judge"
	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/runtimes"
)

// Timeline is what each member was over the run, for the report's lanes: the lab's view of it
// (binary and state) as steps changed it, and what the member itself said of its versions,
// asked every half second. Both hold change points only.
type Timeline struct {
	States   []MemberState   `json:"states"`
	Versions []VersionSample `json:"versions"`
}

// MemberState is a member's binary and state from At on.
type MemberState struct {
	At     time.Time `json:"at"`
	Member string    `json:"member"`
	// Binary is the version of the binary the member runs or last ran.
	Binary string `json:"binary"`
	// State is running, stopped, frozen, partitioned or removed.
	State string `json:"state"`
}

// VersionSample is what a member's /version said from At on (Answered false: nothing).
type VersionSample struct {
	At       time.Time `json:"at"`
	Member   string    `json:"member"`
	Answered bool      `json:"answered"`
	Server   string    `json:"server,omitempty"`
	Cluster  string    `json:"cluster,omitempty"`
	Storage  string    `json:"storage,omitempty"`
}

// recorder builds a Timeline. States are noted by the goroutine that runs the steps; versions
// by a poller of its own, which reads the member list through a snapshot the step goroutine
// publishes.
type recorder struct {
	mu       sync.Mutex
	tl       Timeline
	last     map[string]MemberState
	lastV    map[string]VersionSample
	targets  []pollTarget
	stop     chan struct{}
	finished chan struct{}
}

type pollTarget struct{ name, url string }

func newRecorder() *recorder {
	return &recorder{last: map[string]MemberState{}, lastV: map[string]VersionSample{}}
}

// note records the state of every member now in the cluster; members gone since the last
// note are marked removed. It also refreshes what the poller asks.
func (rc *recorder) note(ctx context.Context, list []runtimes.Member) {
	now := time.Now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	seen := map[string]bool{}
	rc.targets = rc.targets[:0]
	for _, m := range list {
		s := MemberState{At: now, Member: m.Name(), Binary: m.Binary().Version, State: lifeState(ctx, m)}
		seen[s.Member] = true
		rc.add(s)
		rc.targets = append(rc.targets, pollTarget{m.Name(), m.ClientURL()})
	}
	for name, s := range rc.last {
		if !seen[name] && s.State != "removed" {
			rc.add(MemberState{At: now, Member: name, Binary: s.Binary, State: "removed"})
		}
	}
}

func (rc *recorder) add(s MemberState) {
	if l, ok := rc.last[s.Member]; ok && l.Binary == s.Binary && l.State == s.State {
		return
	}
	rc.last[s.Member] = s
	rc.tl.States = append(rc.tl.States, s)
}

func lifeState(ctx context.Context, m runtimes.Member) string {
	switch {
	case m.Frozen():
		return "frozen"
	case m.Partitioned():
		return "partitioned"
	case m.Running(ctx):
		return "running"
	}
	return "stopped"
}

// poll asks every member for its versions every interval until stopped.
func (rc *recorder) poll(interval time.Duration) {
	rc.stop, rc.finished = make(chan struct{}), make(chan struct{})
	hc := &http.Client{Timeout: interval}
	go func() {
		defer close(rc.finished)
		for {
			rc.mu.Lock()
			targets := append([]pollTarget(nil), rc.targets...)
			rc.mu.Unlock()
			var wg sync.WaitGroup
			for _, t := range targets {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), interval)
					v, err := cluster.GetVersions(ctx, hc, t.url)
					cancel()
					rc.sampled(VersionSample{At: time.Now(), Member: t.name, Answered: err == nil,
						Server: v.Server, Cluster: v.Cluster, Storage: v.Storage})
				}()
			}
			wg.Wait()
			select {
			case <-rc.stop:
				return
			case <-time.After(interval):
			}
		}
	}()
}

func (rc *recorder) sampled(v VersionSample) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if l, ok := rc.lastV[v.Member]; ok && l.Answered == v.Answered && l.Server == v.Server && l.Cluster == v.Cluster && l.Storage == v.Storage {
		return
	}
	rc.lastV[v.Member] = v
	rc.tl.Versions = append(rc.tl.Versions, v)
}

// done stops the poller and returns the timeline.
func (rc *recorder) done() Timeline {
	if rc.stop != nil {
		close(rc.stop)
		<-rc.finished
		rc.stop = nil
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.tl
}

// judgeVersions is pkg/judge's version checks on what every member's /version said so far
// (cluster version never above the member's level nor lowered but to an enabled downgrade's
// target, storage version never above the level nor the cluster version outside a downgrade),
// as judge samples: major.minor, on the clock of UnixNano.
func (rc *recorder) judgeVersions(downgrades []judge.DowngradeWindow) []judge.Finding {
	rc.mu.Lock()
	byMember := map[string][]judge.VersionSample{}
	var names []string
	for _, v := range rc.tl.Versions {
		if !v.Answered || v.Server == "" || majorMinor(v.Cluster, "") == "" || strings.Contains(v.Cluster, "not") {
			continue
		}
		if majorMinor(v.Cluster, "") == "3.0" {
			// Upstream 3.5's leader sets 3.0.0 (its MinClusterVersion) when it knows no cluster
			// version and cannot reach every member to decide one (monitorVersions): members
			// that joined with fresh data dirs show it until the real decision. A placeholder
			// below every level, not a lowering.
			continue
		}
		if _, ok := byMember[v.Member]; !ok {
			names = append(names, v.Member)
		}
		byMember[v.Member] = append(byMember[v.Member], judge.VersionSample{At: v.At.UnixNano(),
			Cluster: majorMinor(v.Cluster, ""), Level: majorMinor(v.Server, ""), Storage: majorMinor(v.Storage, "")})
	}
	rc.mu.Unlock()
	sort.Strings(names)
	var out []judge.Finding
	for _, n := range names {
		out = append(out, judge.ClusterVersions(n, byMember[n], downgrades)...)
	}
	return append(out, judge.ClusterVersionsAcross(byMember, downgrades)...)
}
