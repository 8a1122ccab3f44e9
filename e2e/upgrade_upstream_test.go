package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// steadyLoad writes (and reads back) through every member for as long as it runs, counting
// failed requests instead of stopping at the first one.
type steadyLoad struct {
	prefix string
	stop   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	acked    map[string]string
	failed   []failure
	failures atomic.Int64
	reads    atomic.Int64
	lastErr  atomic.Value
}

func startSteadyLoad(t *testing.T, c *Cluster, prefix string, workers int) *steadyLoad {
	t.Helper()
	l := &steadyLoad{prefix: prefix, stop: make(chan struct{}), acked: map[string]string{}}
	cl, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func(w int) {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				key, val := fmt.Sprintf("%s/%d/%06d", prefix, w, i), fmt.Sprint(i)
				began := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := cl.Put(ctx, key, val)
				if err == nil {
					l.mu.Lock()
					l.acked[key] = val
					l.mu.Unlock()
					var r *clientv3.GetResponse
					if r, err = cl.Get(ctx, key); err == nil && (len(r.Kvs) != 1 || string(r.Kvs[0].Value) != val) {
						err = fmt.Errorf("read %s back as %v", key, r.Kvs)
					}
					l.reads.Add(1)
				}
				cancel()
				if err != nil {
					l.failures.Add(1)
					l.lastErr.Store(err.Error())
					l.mu.Lock()
					l.failed = append(l.failed, failure{began: began, ended: time.Now(), err: err.Error()})
					l.mu.Unlock()
					time.Sleep(50 * time.Millisecond)
				}
			}
		}(w)
	}
	t.Cleanup(func() { cl.Close() })
	return l
}

// failure is one failed request and when it ran.
type failure struct {
	began, ended time.Time
	err          string
}

// phase is a stretch of the path during which one member was stopping or starting with a binary
// of one implementation; a request that failed then is put down to that member.
type phase struct {
	member, impl, what string
	from, to           time.Time
}

// blame puts each failed request down to a member change it overlapped: an upstream member's
// first (their shutdowns cut requests), else one of ours, else none.
func blame(failed []failure, phases []phase) map[string][]string {
	out := map[string][]string{}
	for _, f := range failed {
		who, why := "no member change", f.err
		for _, impl := range []string{"upstream", "ours"} {
			for _, p := range phases {
				if p.impl == impl && !f.ended.Before(p.from) && !f.began.After(p.to) {
					who, why = impl, fmt.Sprintf("%s %s %s: %s", p.what, p.impl, p.member, f.err)
					break
				}
			}
			if who != "no member change" {
				break
			}
		}
		out[who] = append(out[who], why)
	}
	return out
}

// ackedCount is how many writes have been acknowledged so far.
func (l *steadyLoad) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// waitAcked waits until n more writes than now are acknowledged: the cluster serves. It fails
// the test after 30 s.
func (l *steadyLoad) waitAcked(t *testing.T, n int) {
	t.Helper()
	want := l.ackedCount() + n
	deadline := time.Now().Add(30 * time.Second)
	for l.ackedCount() < want {
		if time.Now().After(deadline) {
			t.Fatalf("writes stalled at %d acknowledged (waiting for %d)", l.ackedCount(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// end stops the load and returns what was acknowledged.
func (l *steadyLoad) end() map[string]string {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked
}

// clusterVersionOf is the cluster version a member reports on its /version endpoint.
func clusterVersionOf(m *Member) (string, error) {
	resp, err := http.Get(m.ClientURL + "/version")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		Cluster string `json:"etcdcluster"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	return v.Cluster, err
}

// waitStatus waits until every member's cluster version (from /version) and storage version
// (from Status) satisfy ok.
func waitStatus(t *testing.T, c *Cluster, what string, timeout time.Duration, ok func(cluster, storage string) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		all := true
		var seen []string
		for _, m := range c.Members {
			cl := m.Client()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := cl.Status(ctx, m.ClientURL)
			cancel()
			var cv string
			if err == nil {
				cv, err = clusterVersionOf(m)
			}
			if err != nil {
				all = false
				seen = append(seen, m.Name+": "+err.Error())
				continue
			}
			seen = append(seen, fmt.Sprintf("%s: cluster %s storage %q", m.Name, cv, st.StorageVersion))
			if !ok(cv, st.StorageVersion) {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v", what, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// replaceEach stops each member in turn and starts it again on its data dir with bin, waiting
// for it to be healthy and caught up before the next. It returns when each member was stopping
// and starting, and with which implementation (impl names the binaries that are ours).
func replaceEach(t *testing.T, c *Cluster, bin string, impl func(bin string) string) []phase {
	t.Helper()
	var phases []phase
	for _, m := range c.Members {
		start := time.Now()
		if err := m.Stop(); err != nil {
			t.Fatalf("stop %s: %v", m.Name, err)
		}
		phases = append(phases, phase{member: m.Name, impl: impl(m.Bin), what: "stopping", from: start, to: time.Now()})
		m.Bin = bin
		start = time.Now()
		m.Start()
		requireSameHashKV(t, c)
		phases = append(phases, phase{member: m.Name, impl: impl(m.Bin), what: "starting", from: start, to: time.Now()})
	}
	return phases
}

// upgradeAndBack runs a 3-member upstream 3.5 cluster through an in-place upgrade to binary
// next, a downgrade back to 3.5, and a swap back to upstream 3.5, under load. It returns the
// failed requests, by the implementation of the member that was stopping or starting.
func upgradeAndBack(t *testing.T, next string) map[string][]string {
	up35 := UpstreamBinaryAt(t, Upstream35Version, "etcd")
	c := NewCluster(t, 3, "--snapshot-count", "500")
	for _, m := range c.Members {
		m.Bin = up35
	}
	c.Start()
	fillKeyspace(t, c.Client())
	load := startSteadyLoad(t, c, "load", 4)

	impl := func(bin string) string {
		if bin == ServerAt(t, LastReleaseLevel) {
			return "ours"
		}
		return "upstream"
	}
	phases := replaceEach(t, c, next, impl)
	waitStatus(t, c, "cluster version 3.6", 30*time.Second, func(v, s string) bool { return v == "3.6.0" && s == "3.6.0" })
	if _, err := c.Client().Downgrade(Ctx(t), clientv3.DowngradeEnable, "3.5"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, "storage version 3.5", 30*time.Second, func(v, s string) bool { return v == "3.5.0" && s == "3.5.0" })
	phases = append(phases, replaceEach(t, c, up35, impl)...)
	waitStatus(t, c, "the downgrade to finish", 30*time.Second, func(v, _ string) bool { return v == "3.5.0" })

	acked := load.end()
	if len(acked) < 100 {
		t.Fatalf("only %d writes acknowledged during the whole path", len(acked))
	}
	checkAcked(t, c.Client(), "load", acked)
	want := ""
	for i, m := range c.Members {
		got := dump(t, m.Client())
		if i == 0 {
			want = got
		} else if got != want {
			t.Fatalf("%s serves a different keyspace than %s", m.Name, c.Members[0].Name)
		}
	}
	requireSameHashKV(t, c)
	// Upstream 3.5 members published their attributes as v2 requests while ours ran beside them:
	// ours applied them.
	for _, m := range c.Members {
		if m.LogHas("skipping undecodable raft entry") {
			t.Errorf("%s found entries it could not decode\n%s", m.Name, m.LogTail(20))
		}
	}
	t.Logf("%d writes acknowledged, %d read back, %d requests failed", len(acked), load.reads.Load(), load.failures.Load())
	byImpl := blame(load.failed, phases)
	for who, errs := range byImpl {
		t.Logf("failed while %s: %d: %v", who, len(errs), errs)
	}
	return byImpl
}

// The upgrade of the seeds between implementations: a 3-member upstream 3.5.35 cluster is
// upgraded in place to ours, downgraded, and swapped back to upstream 3.5.35, under a writing
// and reading workload, losing no acknowledged write, and no request may fail while one of our
// members stops or starts (failures are blamed on the member changing at the time). The same
// path with upstream 3.6.16 in place of ours runs beside it, to the same checks of data; its
// failed requests are only counted, for comparison: upstream's stops fail some requests.
func TestUpgradeUpstream35ToOursAndBack(t *testing.T) {
	var ours, theirs map[string][]string
	t.Run("ours", func(t *testing.T) { ours = upgradeAndBack(t, ServerAt(t, LastReleaseLevel)) })
	t.Run("upstream 3.6.16", func(t *testing.T) { theirs = upgradeAndBack(t, UpstreamBinaryAt(t, Upstream36Version, "etcd")) })
	if t.Failed() {
		return
	}
	total := func(m map[string][]string) (n int) {
		for _, errs := range m {
			n += len(errs)
		}
		return n
	}
	t.Logf("failed requests over the whole path: through ours %d, through upstream 3.6.16 %d", total(ours), total(theirs))
	if errs := ours["ours"]; len(errs) > 0 {
		t.Errorf("%d requests failed while one of our members stopped or started: %v", len(errs), errs)
	}
}
