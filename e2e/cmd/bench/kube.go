package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/e2e/kubeapi"
	"etcdx/e2e/kubeload"
)

// kubeOptions are the Kubernetes-shaped part's: the shape (docs/kube-shape.md's defaults) and
// how N is stepped up.
type kubeOptions struct {
	shape  kubeload.Shape
	start  int     // the first N
	factor float64 // each next N is this times the last
	most   int     // no N above this
	bisect int     // probes between the last N that held and the first that missed
	warmup time.Duration
	window time.Duration
	rounds int
}

// kubeStep is one N's window.
type kubeStep struct {
	res    kubeload.Result
	cpu    time.Duration // all members' CPU during the window
	rss    int64         // all members' resident memory at its end
	db     int64         // the leader's database size at its end
	holds  bool
	missed string
}

func (k kubeStep) cpuPerRequest() time.Duration {
	if k.res.Sent == 0 {
		return 0
	}
	return k.cpu / time.Duration(k.res.Sent)
}

// The kube part's figures (sample values).
const (
	figKubeN         = "kube-n"
	figKubeMutP99    = "kube-mutating-p99"
	figKubeReadP99   = "kube-read-p99"
	figKubeListP99   = "kube-list-p99"
	figKubeWatchP99  = "kube-watch-p99"
	figKubeCPU       = "kube-cpu-per-request"
	figKubeRSS       = "kube-rss"
	figKubeDB        = "kube-db"
	figKubeFirstFail = "kube-first-failing-n"
)

// benchKube finds the largest N whose window holds every SLO: N grows by ko.factor on one
// cluster until a window misses one, then (nextKubeProbe) down from a start that missed, and the
// gap between the last N that held and the first that missed halved (geometrically) ko.bisect
// times, each probe on a fresh cluster filled straight to its N. Every window is recorded
// (kubeStepKey), the figures at the largest N too.
func benchKube(ko kubeOptions) func(label, bin string, o options, profDir string) (sample, error) {
	return func(label, bin string, o options, profDir string) (sample, error) {
		prof := kubeProfiler{dir: profDir, d: o.profileFor}
		smp := newSample()
		steps := map[int]kubeStep{}
		keep := func(st kubeStep) {
			steps[st.res.Nodes] = st
			for k, v := range st.values() {
				smp.values[kubeStepKey(st.res.Nodes, k)] = v
			}
		}
		pass, fail := 0, 0
		err := onKubeCluster(label, bin, ko, prof.on(), func(ss []*server, l *kubeload.Load) error {
			for n, ok := ko.start, ko.start <= ko.most; ok; n, ok = nextKubeStep(n, ko) {
				st, err := kubeWindow(label, ss, l, n, ko, prof)
				if err != nil {
					return err
				}
				keep(st)
				if !st.holds {
					fail = n
					return nil
				}
				pass = n
			}
			return nil
		})
		if err != nil {
			return smp, err
		}
		for downs, halvings := 0, 0; ; {
			n, ok := nextKubeProbe(pass, fail, downs, halvings, ko)
			if !ok {
				break
			}
			if pass == 0 {
				downs++
			} else {
				halvings++
			}
			err := onKubeCluster(label, bin, ko, prof.on(), func(ss []*server, l *kubeload.Load) error {
				st, err := kubeWindow(label, ss, l, n, ko, prof)
				if err == nil {
					keep(st)
				}
				return err
			})
			if err != nil {
				return smp, err
			}
			if steps[n].holds {
				pass = n
			} else {
				fail = n
			}
		}
		if fail > 0 {
			smp.values[figKubeFirstFail] = float64(fail)
		}
		if pass == 0 {
			return smp, nil // no N held: the report shows the first that missed
		}
		for k, v := range steps[pass].values() {
			smp.values[k] = v
		}
		return smp, nil
	}
}

// nextKubeStep is the ramp's N after n, which held: n grown by the factor, or --kube-most itself
// when that would pass it, so that a side that holds every step is tried at the largest N asked
// for instead of stopping one step short; false after --kube-most.
func nextKubeStep(n int, ko kubeOptions) (int, bool) {
	if n >= ko.most {
		return 0, false
	}
	return min(int(math.Ceil(float64(n)*ko.factor)), ko.most), true
}

// kubeMostDowns bounds the probes below the start when the start itself missed.
const kubeMostDowns = 3

// nextKubeProbe is the N the search probes next on a fresh cluster after the ramp, from the
// largest N that held (pass, 0 when none did) and the smallest that missed (fail, 0 when none
// did), with downs probes made below the start and halvings between the two; false when the
// search is over. A side that misses at the start steps down by the factor until an N holds
// (a side whose only window missed has no figure to compare), then the gap is halved
// geometrically up to ko.bisect times, while it is wider than one node in fifty.
func nextKubeProbe(pass, fail, downs, halvings int, ko kubeOptions) (int, bool) {
	switch {
	case fail == 0:
		return 0, false
	case pass == 0:
		n := int(math.Floor(float64(fail) / ko.factor))
		return n, downs < kubeMostDowns && n > 0
	case halvings < ko.bisect && fail-pass > max(1, pass/50):
		return int(math.Round(math.Sqrt(float64(pass) * float64(fail)))), true
	}
	return 0, false
}

// onKubeCluster runs fn on a fresh three-member cluster with the load's clients and watches.
// pprof starts them with their profiling endpoints.
func onKubeCluster(label, bin string, ko kubeOptions, pprof bool, fn func([]*server, *kubeload.Load) error) error {
	ss, err := startClusterWith(label, bin, 3, pprof, kubeload.MemberFlags...)
	defer func() {
		for _, s := range ss {
			s.stop()
		}
	}()
	if err != nil {
		return err
	}
	l, err := kubeload.New(context.Background(), endpoints(ss), ko.shape)
	if err != nil {
		return err
	}
	defer l.Close()
	return fn(ss, l)
}

// kubeProfiler saves each member's CPU profile and what it allocated (the collector's work) in
// the start of each window, and what it holds at the window's end (what the collector marks), in
// dir, when set.
type kubeProfiler struct {
	dir string
	d   time.Duration
}

func (p kubeProfiler) on() bool { return p.dir != "" }

// start begins the members' profiles of the window at n nodes; the returned func waits for them.
func (p kubeProfiler) start(label string, ss []*server, n int) func() {
	if !p.on() {
		return func() {}
	}
	var waits []func()
	for _, s := range ss {
		name := p.path(label, s, n)
		waits = append(waits, s.profile(name+".cpu.pprof", p.d), s.allocs(name+".allocs.pprof", p.d))
	}
	return func() {
		for _, w := range waits {
			w()
		}
	}
}

// path is where a member's profiles of the window at n nodes go, less their suffix.
func (p kubeProfiler) path(label string, s *server, n int) string {
	return filepath.Join(p.dir, fileName(fmt.Sprintf("%s-%s-kube-%d", label, s.Name, n)))
}

// heaps saves the members' in-use heaps at the end of the window at n nodes.
func (p kubeProfiler) heaps(label string, ss []*server, n int) {
	if !p.on() {
		return
	}
	var waits []func()
	for _, s := range ss {
		waits = append(waits, s.heap(p.path(label, s, n)+".heap.pprof"))
	}
	for _, w := range waits {
		w()
	}
}

// kubeWindow grows the load to n nodes (not timed), runs it ko.warmup unmeasured (what the
// growth left behind settles), then measures one ko.window.
func kubeWindow(label string, ss []*server, l *kubeload.Load, n int, ko kubeOptions, prof kubeProfiler) (kubeStep, error) {
	ctx := context.Background()
	t0 := time.Now()
	if err := l.Populate(ctx, n); err != nil {
		return kubeStep{}, fmt.Errorf("populate %d nodes: %w", n, err)
	}
	fmt.Printf("%-12s N=%d populated in %v\n", label, n, time.Since(t0).Round(time.Second))
	if ko.warmup > 0 {
		l.Run(ctx, ko.warmup)
	}
	cpu0 := cpuTimes(ss)
	profiled := prof.start(label, ss, n)
	res := l.Run(ctx, ko.window)
	st := kubeStep{res: res, cpu: cpuTimes(ss) - cpu0}
	profiled()
	prof.heaps(label, ss, n)
	for _, s := range ss {
		_, now := s.memory()
		st.rss += now
	}
	st.db = leaderDB(ss)
	st.holds, st.missed = res.Holds(kubeload.KubernetesSLO)
	printKubeStep(label, st)
	return st, nil
}

// topology says which members the API servers talk to.
func topology(s kubeload.Shape) string {
	if s.Stacked {
		return "to its own member, as kubeadm's stacked control plane"
	}
	return "to every member"
}

// kubeStepKey is the sample key of one figure of the window at n nodes.
func kubeStepKey(n int, fig string) string { return fmt.Sprintf("kube-step/%d/%s", n, fig) }

// figKubeHolds is 1 for a window that held every SLO, 0 for one that missed.
const figKubeHolds = "kube-holds"

// values are a window's figures by their keys.
func (k kubeStep) values() map[string]float64 {
	c := k.res.Classes
	holds := 0.0
	if k.holds {
		holds = 1
	}
	return map[string]float64{
		figKubeN: float64(k.res.Nodes), figKubeHolds: holds,
		figKubeMutP99: float64(c[kubeload.Mutating].P99), figKubeReadP99: float64(c[kubeload.Read].P99),
		figKubeListP99: float64(c[kubeload.List].P99), figKubeWatchP99: float64(c[kubeload.Delivery].P99),
		figKubeCPU: float64(k.cpuPerRequest()), figKubeRSS: float64(k.rss), figKubeDB: float64(k.db),
	}
}

func printKubeStep(label string, st kubeStep) {
	verdict := "holds"
	if !st.holds {
		verdict = "misses: " + st.missed
	}
	c := st.res.Classes
	fmt.Printf("%-12s N=%d %v: %d requests (%.0f/s), server CPU/request %v, members' RSS %.0f MiB, db %.0f MiB; %s\n",
		label, st.res.Nodes, st.res.Window, st.res.Sent, float64(st.res.Sent)/st.res.Window.Seconds(), st.cpuPerRequest(),
		float64(st.rss)/(1<<20), float64(st.db)/(1<<20), verdict)
	for i, s := range c {
		fmt.Printf("%-12s     %-20s %s\n", label, kubeload.Class(i), s)
	}
}

// leaderDB is the database size the first member that answers reports.
func leaderDB(ss []*server) int64 {
	for _, s := range ss {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.ClientURL}, DialTimeout: 2 * time.Second})
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := c.Status(ctx, s.ClientURL)
		cancel()
		c.Close()
		if err == nil {
			return st.DbSize
		}
	}
	return 0
}

// kubeFigures are the kube part's summary rows: each side's largest N (higher is better) and
// the first that missed, then each side's figures at its own largest N.
var kubeFigures = []figure{
	{key: figKubeN, title: "largest N (nodes) whose window held every SLO", format: count},
	{key: figKubeFirstFail, title: "smallest N found that missed one", format: count},
	{key: figKubeMutP99, title: "at its largest N: mutating requests p99 (SLO 1 s)", format: dur},
	{key: figKubeReadP99, title: "at its largest N: single-object reads p99 (SLO 1 s)", format: dur},
	{key: figKubeListP99, title: "at its largest N: full LIST of pods p99 (SLO 30 s)", format: dur},
	{key: figKubeWatchP99, title: "at its largest N: watch delivery p99 (SLO 5 s)", format: dur},
	{key: figKubeCPU, title: "at its largest N: all members' CPU per request", format: dur},
	{key: figKubeRSS, title: "at its largest N: all members' resident memory", format: mib},
	{key: figKubeDB, title: "at its largest N: database size", format: mib},
}

// kubeMarkdown is the kube part's section of the report.
func (r report) kubeMarkdown(values func(label, key string) []float64, runLine string) string {
	ours, up := r.subjects[0].label, r.subjects[1].label
	if len(values(ours, figKubeN))+len(values(ours, figKubeFirstFail)) == 0 {
		return ""
	}
	var b strings.Builder
	k := r.kube
	fmt.Fprintf(&b, "\n## Kubernetes-shaped load: the largest cluster a three-member etcd carries\n\n%s", runLine)
	fmt.Fprintf(&b, "What the kube-apiservers of a cluster of N nodes send etcd (e2e/kubeload, shaped by docs/kube-shape.md, recorded from kube-apiserver %s): %d API servers, each with its own client (%s), its watch of each of %d resource prefixes (progress notifications, previous values), a progress request every %v and its own leases; per node a lease renewed every %v and its status every %v; %d pods per node, %.2f replaced per node per minute (each life: create, %d updates, %d reads, %d events with an hour's lease, delete); each API server refilling its caches of pods, nodes and leases from etcd every %v (pages of %d at a revision, by RangeStream where the member has it, 3.7, and by paginated Range before); compaction every %v. ",
		kubeapi.Version, k.shape.APIServers, topology(k.shape), k.shape.WatchedResources, k.shape.ProgressRequests, k.shape.LeaseRenew, k.shape.NodeStatus, k.shape.PodsPerNode, k.shape.ChurnPerNodeMinute, k.shape.PodUpdates, k.shape.PodReads, k.shape.EventsPerPod, k.shape.CacheRefill, k.shape.ListPage, k.shape.Compaction)
	fmt.Fprintf(&b, "Open loop: each request is sent when its schedule says and timed from then. Three members with kubeadm's flags (%s). N starts at %d and grows %.2fx per step, the last at %d, on one cluster (the nodes added with their objects first, not timed, then %v of the load unmeasured, then a %v window) until a window misses an SLO (if the first misses, N steps down %.2fx at a time on fresh clusters, up to %d times, until one holds); then the gap between the last N that held and the first that missed is halved (geometrically) up to %d times, each probe on a fresh cluster. SLOs (Kubernetes' scalability SLOs): p99 of mutating requests and of single-object reads <= 1 s, of a full LIST of pods <= 30 s, of watch delivery (write to watcher) <= 5 s, no failed request. Higher N is better; in the other rows each side is at its own largest N.\n\n",
		strings.Join(kubeload.MemberFlags, " "), k.start, k.factor, k.most, k.warmup, k.window, k.factor, kubeMostDowns, k.bisect)
	fmt.Fprintf(&b, "| figure | ours | upstream | ratio (rounds) |\n|---|---|---|---|\n")
	for i, f := range kubeFigures {
		ov, uv := values(ours, f.key), values(up, f.key)
		if len(ov) == 0 && len(uv) == 0 {
			continue
		}
		rt := fmt.Sprintf("%s (%s)", ratio(median(ov), median(uv)), ratios(ov, uv))
		if i >= 2 && median(values(ours, figKubeN)) != median(values(up, figKubeN)) {
			rt = "- (different N)"
		}
		show := func(v []float64) string { return f.format(median(v)) }
		switch f.key {
		case figKubeN:
			if len(values(ours, figKubeFirstFail)) == 0 {
				rt += fmt.Sprintf(", a floor: ours missed no N up to %d", k.most)
			}
		case figKubeFirstFail: // a side that missed nothing has no such N
			if len(ov) == 0 || len(uv) == 0 {
				rt = "-"
			}
			show = func(v []float64) string {
				if len(v) == 0 {
					return fmt.Sprintf("none up to %d", k.most)
				}
				return f.format(median(v))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.title, show(ov), show(uv), rt)
	}
	// every window either side measured, by N
	ns := map[int]bool{}
	for _, label := range []string{ours, up} {
		for _, s := range r.samples[label] {
			for key := range s.values {
				var n int
				if _, err := fmt.Sscanf(key, "kube-step/%d/", &n); err == nil {
					ns[n] = true
				}
			}
		}
	}
	sorted := make([]int, 0, len(ns))
	for n := range ns {
		sorted = append(sorted, n)
	}
	sort.Ints(sorted)
	cell := func(label string, n int) string {
		v := func(fig string) []float64 { return values(label, kubeStepKey(n, fig)) }
		if len(v(figKubeHolds)) == 0 {
			return " | | | | | "
		}
		verdict := "holds"
		if median(v(figKubeHolds)) < 1 {
			verdict = "**misses**"
		}
		return fmt.Sprintf(" %s | %s | %s | %s | %s | %s ", verdict, dur(median(v(figKubeMutP99))), dur(median(v(figKubeListP99))),
			dur(median(v(figKubeWatchP99))), dur(median(v(figKubeCPU))), mib(median(v(figKubeRSS))))
	}
	fmt.Fprintf(&b, "\nEvery window, by N (medians over rounds):\n\n| N | ours | mutating p99 | LIST p99 | watch p99 | CPU/request | resident | upstream | mutating p99 | LIST p99 | watch p99 | CPU/request | resident |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range sorted {
		fmt.Fprintf(&b, "| %d |%s|%s|\n", n, cell(ours, n), cell(up, n))
	}
	return b.String()
}
