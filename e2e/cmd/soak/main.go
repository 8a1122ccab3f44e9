package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"etcdx/e2e"
	"etcdx/e2e/kubeload"
)

type options struct {
	ours, upstreamVersion, out, plot, work string
	samples, reportFrom                    string
	hours                                  float64
	nodes                                  int
	sample, defragEvery                    time.Duration
	shape                                  kubeload.Shape
}

func main() {
	var o options
	flag.StringVar(&o.ours, "ours", "../bin/etcd", "our etcd binary")
	flag.StringVar(&o.upstreamVersion, "upstream-version", e2e.CurrentUpstream, "upstream's release, built from the Go module proxy")
	flag.Float64Var(&o.hours, "hours", 1, "how long the soak runs")
	flag.IntVar(&o.nodes, "nodes", 500, "N: the nodes the load plays on each side (well inside both sides' largest N in docs/performance.md)")
	flag.DurationVar(&o.sample, "sample", time.Minute, "sampling period: one load window per sample")
	flag.DurationVar(&o.defragEvery, "defrag-every", 20*time.Minute, "every member is defragmented, one at a time, this often")
	flag.StringVar(&o.out, "out", "../docs/soak.md", "the report")
	flag.StringVar(&o.plot, "plot", "../docs/soak.png", "the plot of every series")
	flag.StringVar(&o.work, "work", "", "directory for the members' data (default: a new temporary one, removed after)")
	flag.StringVar(&o.samples, "samples", "", "save every sample as JSON in this file, after each window (for --report-from)")
	flag.StringVar(&o.reportFrom, "report-from", "", "write the report and plot from a file saved by --samples, without running the load")
	o.shape.Flags(flag.CommandLine, kubeload.Defaults(0))
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// side is one implementation's cluster and its load.
type side struct {
	label   string
	cluster *etcdCluster
	load    *kubeload.Load
}

func run(o options) error {
	if o.reportFrom != "" {
		rec, err := loadRecord(o.reportFrom)
		if err != nil {
			return err
		}
		return writeReport(rec, o)
	}
	// The report is written after hours of load: make sure it has somewhere to go first.
	for _, f := range []string{o.out, o.plot, o.samples} {
		if f == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return fmt.Errorf("the report's directory: %w", err)
		}
	}
	dir, unreachable, err := e2e.BuildUpstream(o.upstreamVersion)
	if err != nil || unreachable != "" {
		return fmt.Errorf("upstream etcd %s: %v %s", o.upstreamVersion, err, unreachable)
	}
	if o.work == "" {
		if o.work, err = os.MkdirTemp("", "soak-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.work)
	}
	ctx := context.Background()
	sides := []*side{{label: "ours"}, {label: "upstream " + o.upstreamVersion}}
	bins := []string{o.ours, filepath.Join(dir, "etcd")}
	defer func() {
		for _, s := range sides {
			if s.load != nil {
				s.load.Close()
			}
			if s.cluster != nil {
				s.cluster.stop()
			}
		}
	}()
	for i, s := range sides {
		if s.cluster, err = startCluster(filepath.Join(o.work, fmt.Sprint(i)), bins[i], kubeload.MemberFlags); err != nil {
			return fmt.Errorf("%s: %w", s.label, err)
		}
		if s.load, err = kubeload.New(ctx, s.cluster.Endpoints(), o.shape); err != nil {
			return fmt.Errorf("%s: %w", s.label, err)
		}
		t0 := time.Now()
		if err := s.load.Populate(ctx, o.nodes); err != nil {
			return fmt.Errorf("%s: populate: %w", s.label, err)
		}
		fmt.Printf("%s: %d nodes populated in %v\n", s.label, o.nodes, time.Since(t0).Round(time.Second))
	}
	rec := record{Date: time.Now().UTC().Format("2006-01-02"), Hours: o.hours, Nodes: o.nodes, Sample: o.sample,
		DefragEvery: o.defragEvery, Compaction: o.shape.Compaction, OursBuiltAt: builtAt(o.ours)}
	for _, s := range sides {
		rec.Sides = append(rec.Sides, recordSide{Label: s.label})
	}
	start := time.Now()
	end := start.Add(time.Duration(o.hours * float64(time.Hour)))
	nextDefrag := start.Add(o.defragEvery)
	for time.Now().Before(end) {
		var defrags sync.WaitGroup
		if o.defragEvery > 0 && !time.Now().Before(nextDefrag) {
			nextDefrag = nextDefrag.Add(o.defragEvery)
			for _, s := range sides {
				defrags.Add(1)
				go func() { defer defrags.Done(); s.cluster.defragAll(ctx) }()
			}
		}
		var wg sync.WaitGroup
		results := make([]kubeload.Result, len(sides))
		for i, s := range sides {
			wg.Add(1)
			go func() { defer wg.Done(); results[i] = s.load.Run(ctx, o.sample) }()
		}
		wg.Wait()
		defrags.Wait()
		at := time.Since(start)
		for i, s := range sides {
			smp := s.cluster.sample(ctx, at, results[i])
			rec.Sides[i].Samples = append(rec.Sides[i].Samples, smp)
			fmt.Printf("%6s %-16s %s\n", at.Round(time.Second), s.label, smp)
		}
		rec.Took = time.Since(start)
		if o.samples != "" {
			if err := rec.save(o.samples); err != nil {
				return err
			}
		}
	}
	return writeReport(rec, o)
}

// writeReport writes the report and the plot of rec where o says.
func writeReport(rec record, o options) error {
	rep := newReport(rec, o.out, o.plot)
	if err := writePlot(o.plot, rec.Sides); err != nil {
		return err
	}
	if err := os.WriteFile(o.out, []byte(rep), 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", o.out, "and", o.plot)
	if strings.Contains(rep, verdictGrows) {
		fmt.Println("a series of ours grows where upstream's does not: see", o.out)
	}
	return nil
}
