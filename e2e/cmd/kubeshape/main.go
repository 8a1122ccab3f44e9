package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"etcdx/e2e"
	"etcdx/e2e/kubeapi"
	"etcdx/e2e/reqrecord"
	"etcdx/upgradelab/cluster"
)

type options struct {
	etcd, kubeVersion, work, md, js string
	fleet                           kubeapi.FleetOptions
	steady, settle                  time.Duration
	extra                           string
	rerender                        bool
}

func main() {
	var o options
	flag.StringVar(&o.etcd, "etcd", "", "etcd binary the member runs (default: upstream's current release, built from the Go module proxy)")
	flag.StringVar(&o.kubeVersion, "kube-version", kubeapi.Version, "Kubernetes release of kube-apiserver")
	flag.StringVar(&o.work, "work", "", "directory for the member's data and the logs (default: a new temporary one)")
	flag.StringVar(&o.md, "out", "docs/kube-shape.md", "the record, in Markdown")
	flag.StringVar(&o.js, "json", "docs/kube-shape.json", "the record's rows, as JSON")
	flag.IntVar(&o.fleet.Nodes, "nodes", 20, "nodes the fleet plays")
	flag.IntVar(&o.fleet.PodsPerNode, "pods-per-node", 10, "pods per node")
	flag.Float64Var(&o.fleet.ChurnPerNodeMinute, "churn", 0.5, "pods replaced per node per minute")
	flag.DurationVar(&o.fleet.LeaseRenew, "lease-renew", 10*time.Second, "node lease renewal period (kubelet's default)")
	flag.DurationVar(&o.fleet.NodeStatus, "node-status", time.Minute, "node status report period (kubelet reports at least every 5 minutes, and whenever a condition changes)")
	flag.DurationVar(&o.fleet.InformerRestart, "informer-restart", time.Minute, "how often a client lists all pods in pages of 500")
	flag.BoolVar(&o.fleet.NodeWatches, "node-watches", true, "each node watches its own pods")
	flag.DurationVar(&o.settle, "settle", 30*time.Second, "idle time after kube-apiserver is ready, recorded as its own phase")
	flag.DurationVar(&o.steady, "for", 7*time.Minute, "steady phase (kube-apiserver compacts every 5 minutes)")
	flag.StringVar(&o.extra, "kube-flags", "", "extra kube-apiserver flags, space-separated")
	flag.BoolVar(&o.rerender, "rerender", false, "write --out again from the record in --json, without recording")
	flag.Parse()
	o.fleet.Namespace, o.fleet.Seed = "bench", 1
	if o.rerender {
		if err := rerender(o); err != nil {
			fmt.Fprintln(os.Stderr, "kubeshape:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "kubeshape:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	etcdBin := o.etcd
	if etcdBin == "" {
		dir, unreachable, err := e2e.BuildUpstream(e2e.CurrentUpstream)
		if err != nil || unreachable != "" {
			return fmt.Errorf("upstream etcd: %v %s", err, unreachable)
		}
		etcdBin = filepath.Join(dir, "etcd")
	}
	fmt.Println("building kube-apiserver", o.kubeVersion, "(cached after the first time)")
	kubeBin, err := kubeapi.Build(o.kubeVersion)
	if err != nil {
		return err
	}
	if o.work == "" {
		if o.work, err = os.MkdirTemp("", "kubeshape-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.work)
	}
	c, err := cluster.New(filepath.Join(o.work, "etcd"), 1, "kubeshape")
	if err != nil {
		return err
	}
	m := c.Members[0]
	m.Bin, m.LogLevel = etcdBin, "warn"
	if err := m.Start(); err != nil {
		return err
	}
	defer m.Stop(10 * time.Second)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = m.WaitHealthy(wctx)
	cancel()
	if err != nil {
		return fmt.Errorf("etcd member: %w (log %s)", err, m.LogPath)
	}
	rec := reqrecord.NewRecorder()
	proxy, err := reqrecord.Start(strings.TrimPrefix(m.ClientURL, "http://"), rec)
	if err != nil {
		return err
	}
	defer proxy.Close()
	var extra []string
	if o.extra != "" {
		extra = strings.Fields(o.extra)
	}
	fmt.Println("starting kube-apiserver against the recording proxy")
	kube, err := kubeapi.Start(kubeapi.Options{Bin: kubeBin, Dir: filepath.Join(o.work, "kube"), Etcd: "http://" + proxy.Addr(), Extra: extra}, 2*time.Minute)
	if err != nil {
		return err
	}
	defer kube.Stop()
	rec.Mark("idle")
	fmt.Printf("kube-apiserver ready; idle for %v\n", o.settle)
	if !sleep(ctx, o.settle) {
		return ctx.Err()
	}
	rec.Mark("setup")
	fleet := kubeapi.NewFleet(kube, o.fleet)
	fmt.Printf("creating %d nodes and %d pods\n", o.fleet.Nodes, o.fleet.Nodes*o.fleet.PodsPerNode)
	if err := fleet.Setup(ctx); err != nil {
		return err
	}
	rec.Mark("steady")
	fmt.Printf("steady for %v\n", o.steady)
	sctx, cancel := context.WithTimeout(ctx, o.steady)
	fleet.Run(sctx)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	end := rec.Elapsed()
	rec.Mark("end")
	fmt.Printf("fleet: %d requests, %d failed %v\n", fleet.Stats.Requests.Load(), fleet.Stats.Failed.Load(), fleet.Stats.Errors())
	return write(o, rec.Calls(), end, &fleet.Stats)
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// record is what the JSON file holds: the run's parameters and each phase's rows.
type record struct {
	Date        string                     `json:"date"`
	Kubernetes  string                     `json:"kubernetes"`
	Fleet       kubeapi.FleetOptions       `json:"fleet"`
	Phases      map[string][]reqrecord.Row `json:"phases"`
	PhaseLength map[string]string          `json:"phaseLength"`
	FleetCalls  int64                      `json:"fleetRequests"`
	FleetFailed int64                      `json:"fleetFailed"`
}

// phaseOrder is the order of a recording's phases.
var phaseOrder = []string{"start", "idle", "setup", "steady"}

// rerender writes the Markdown of the record in o.js again (after a change to its text).
func rerender(o options) error {
	b, err := os.ReadFile(o.js)
	if err != nil {
		return err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", o.js, err)
	}
	var order []reqrecord.Window
	for _, p := range phaseOrder {
		if _, ok := r.Phases[p]; ok {
			order = append(order, reqrecord.Window{Phase: p})
		}
	}
	o.fleet = r.Fleet
	return os.WriteFile(o.md, []byte(markdown(o, r, order)), 0o644)
}

func write(o options, calls []*reqrecord.Call, end time.Duration, st *kubeapi.FleetStats) error {
	r := record{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Kubernetes: o.kubeVersion, Fleet: o.fleet,
		Phases: map[string][]reqrecord.Row{}, PhaseLength: map[string]string{}, FleetCalls: st.Requests.Load(), FleetFailed: st.Failed.Load()}
	var order []reqrecord.Window
	for _, w := range reqrecord.Windows(calls, end) {
		if w.Phase == "end" {
			continue
		}
		r.Phases[w.Phase] = reqrecord.Summarize(calls, "/registry", w)
		r.PhaseLength[w.Phase] = (w.To - w.From).Round(time.Second).String()
		order = append(order, w)
	}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.js, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(o.md, []byte(markdown(o, r, order)), 0o644)
}
