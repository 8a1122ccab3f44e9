package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/e2e/kubeload"
)

// kubeOptions are the Kubernetes-shaped part's: the shape (docs/kube-shape.md's defaults) and
// how N is stepped up.
type kubeOptions struct {
	shape  kubeload.Shape
	start  int     // the first N
	factor float64 // each next N is this times the last
	most   int     // no N above this
	window time.Duration
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

// benchKube steps N up on a fresh three-member cluster until a window misses an SLO, and
// reports the largest N whose window held every SLO, with its figures.
func benchKube(ko kubeOptions) func(label, bin string, o options, _ string) (sample, error) {
	return func(label, bin string, o options, _ string) (sample, error) {
		smp := newSample()
		ss, err := startClusterWith(label, bin, 3, false, kubeload.MemberFlags...)
		defer func() {
			for _, s := range ss {
				s.stop()
			}
		}()
		if err != nil {
			return smp, err
		}
		ctx := context.Background()
		l, err := kubeload.New(ctx, endpoints(ss), ko.shape)
		if err != nil {
			return smp, err
		}
		defer l.Close()
		var best *kubeStep
		for n := ko.start; n <= ko.most; n = int(math.Ceil(float64(n) * ko.factor)) {
			t0 := time.Now()
			if err := l.Populate(ctx, n); err != nil {
				return smp, fmt.Errorf("populate %d nodes: %w", n, err)
			}
			fmt.Printf("%-12s N=%d populated in %v\n", label, n, time.Since(t0).Round(time.Second))
			cpu0 := cpuTimes(ss)
			res := l.Run(ctx, ko.window)
			st := kubeStep{res: res, cpu: cpuTimes(ss) - cpu0}
			for _, s := range ss {
				_, now := s.memory()
				st.rss += now
			}
			st.db = leaderDB(ss)
			st.holds, st.missed = res.Holds(kubeload.KubernetesSLO)
			printKubeStep(label, st)
			if !st.holds {
				smp.values[figKubeFirstFail] = float64(n)
				break
			}
			best = &st
		}
		if best == nil {
			return smp, nil // no N held: the report shows the first failing one
		}
		c := best.res.Classes
		smp.values[figKubeN] = float64(best.res.Nodes)
		smp.values[figKubeMutP99] = float64(c[kubeload.Mutating].P99)
		smp.values[figKubeReadP99] = float64(c[kubeload.Read].P99)
		smp.values[figKubeListP99] = float64(c[kubeload.List].P99)
		smp.values[figKubeWatchP99] = float64(c[kubeload.Delivery].P99)
		smp.values[figKubeCPU] = float64(best.cpuPerRequest())
		smp.values[figKubeRSS] = float64(best.rss)
		smp.values[figKubeDB] = float64(best.db)
		return smp, nil
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

// kubeFigures are the kube part's rows; N is better higher, the rest lower.
var kubeFigures = []figure{
	{key: figKubeN, title: "largest N (nodes) whose window held every SLO", format: count},
	{key: figKubeFirstFail, title: "first N that missed one", format: count},
	{key: figKubeMutP99, title: "at that N: mutating requests p99 (SLO 1 s)", format: dur},
	{key: figKubeReadP99, title: "at that N: single-object reads p99 (SLO 1 s)", format: dur},
	{key: figKubeListP99, title: "at that N: full LIST of pods p99 (SLO 30 s)", format: dur},
	{key: figKubeWatchP99, title: "at that N: watch delivery p99 (SLO 5 s)", format: dur},
	{key: figKubeCPU, title: "at that N: all members' CPU per request", format: dur},
	{key: figKubeRSS, title: "at that N: all members' resident memory", format: mib},
	{key: figKubeDB, title: "at that N: database size", format: mib},
}

// kubeMarkdown is the kube part's section of the report.
func (r report) kubeMarkdown(values func(label, key string) []float64) string {
	ours, up := r.subjects[0].label, r.subjects[1].label
	if len(values(ours, figKubeN))+len(values(ours, figKubeFirstFail)) == 0 {
		return ""
	}
	var b strings.Builder
	k := r.kube
	fmt.Fprintf(&b, "\n## Kubernetes-shaped load: the largest cluster a three-member etcd carries\n\n")
	fmt.Fprintf(&b, "What the kube-apiservers of a cluster of N nodes send etcd (e2e/kubeload, shaped by docs/kube-shape.md, recorded from kube-apiserver %s): %d API servers, each with its own client, its watch of each of %d resource prefixes (progress notifications, previous values) and its own leases; per node a lease renewed every %v and its status every %v; %d pods per node, %.2f replaced per node per minute (each life: create, %d updates, %d read, %d events with an hour's lease, delete); a LIST of every pod from etcd every %v; compaction every %v. ",
		"v1.37.2", k.shape.APIServers, k.shape.WatchedResources, k.shape.LeaseRenew, k.shape.NodeStatus, k.shape.PodsPerNode, k.shape.ChurnPerNodeMinute, k.shape.PodUpdates, k.shape.PodReads, k.shape.EventsPerPod, k.shape.CacheRefill, k.shape.Compaction)
	fmt.Fprintf(&b, "Open loop: each request is sent when its schedule says and timed from then. Three members with kubeadm's flags (%s). N starts at %d and grows %.2fx per step (the nodes added with their objects first, not timed), each step a %v window; the first window that misses an SLO ends the search. SLOs (Kubernetes' scalability SLOs): p99 of mutating requests and of single-object reads <= 1 s, of a full LIST of pods <= 30 s, of watch delivery (write to watcher) <= 5 s, no failed request. Higher N is better; every other row, lower.\n\n",
		strings.Join(kubeload.MemberFlags, " "), k.start, k.factor, k.window)
	fmt.Fprintf(&b, "| figure | ours | upstream | ratio (rounds) |\n|---|---|---|---|\n")
	for _, f := range kubeFigures {
		ov, uv := values(ours, f.key), values(up, f.key)
		if len(ov) == 0 && len(uv) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s (%s) |\n", f.title, f.format(median(ov)), f.format(median(uv)), ratio(median(ov), median(uv)), ratios(ov, uv))
	}
	return b.String()
}
