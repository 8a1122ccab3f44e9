// Command bench measures our etcd and upstream etcd side by side, in the same run on the same
// machine, with the same flags and workloads (bounded in count and time), and writes a Markdown
// report. `make bench` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"etcdx/e2e"
)

// sample is what one round measured of one implementation: workload results by name and
// single figures by their key.
type sample struct {
	results map[string]result
	values  map[string]float64
}

func newSample() sample {
	return sample{results: map[string]result{}, values: map[string]float64{}}
}

func (s sample) merge(o sample) {
	for k, v := range o.results {
		s.results[k] = v
	}
	for k, v := range o.values {
		s.values[k] = v
	}
}

func (sample) printResult(label, name string, r result) {
	fmt.Printf("%-12s %-40s %8d ops %6d errors %10.0f ops/s  p50 %-10v p99 %-10v server CPU/op %v  client CPU/op %v\n", label, name, r.ops, r.errors, r.rate(), r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.cpuPerOp(), r.clientCPUPerOp())
}

// The single figures' keys.
const (
	figPeakRSS      = "peak-rss"
	figBytesPerKey  = "bytes-per-key"
	figCompactPause = "compact-pause"
	figCompactTook  = "compact-took"
	figWatchP99     = "watch-p99"
	figWatchMax     = "watch-max"
	figRollStall    = "roll-stall"
	figRollFailed   = "roll-failed"
	figRollMaxLat   = "roll-max-latency"
	figSlowestStop  = "slowest-stop"
	figCatchup      = "catchup"
	figCatchupStuck = "catchup-stuck"
)

// part is one scenario each round runs for each implementation.
type part struct {
	name string
	run  func(label, bin string, o options, round int) (sample, error)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func main() {
	ours := flag.String("ours", "bin/etcd", "our etcd binary")
	upstream := flag.String("upstream", "", "upstream etcd binary (default: built from the Go module proxy)")
	out := flag.String("out", "docs/performance.md", "report path")
	var o options
	flag.IntVar(&o.clients, "clients", 64, "concurrent clients")
	flag.IntVar(&o.conns, "conns", 8, "gRPC connections shared by the clients")
	flag.IntVar(&o.scale, "scale", 1, "multiplies the operation counts of the throughput workloads")
	flag.DurationVar(&o.limit, "limit", 60*time.Second, "time limit per workload")
	flag.Int64Var(&o.catchupBytes, "catchup-bytes", 1<<30, "data a new member must catch up with")
	flag.IntVar(&o.keys, "keys", 1000000, "keys (256 B values) of the memory and compaction figures")
	flag.IntVar(&o.watchers, "watchers", 10000, "watchers of the watch delivery figure")
	flag.IntVar(&o.events, "events", 100, "puts each watcher receives")
	parts := flag.String("parts", "single,cluster,keys,watch", "which parts to run: single (one member's throughput), cluster (three members, rolling restart, catch-up), keys (memory per key, compaction pause), watch (watch delivery)")
	rounds := flag.Int("rounds", 3, "rounds, alternating which implementation goes first")
	profDir := flag.String("pprof", "", "save CPU profiles of both implementations' single-member and three-member workloads (first round) in this directory")
	flag.DurationVar(&o.profileFor, "pprof-seconds", 3*time.Second, "length of each CPU profile")
	flag.Parse()
	upstreamVersion := e2e.UpstreamVersion
	if *upstream == "" {
		dir, unreachable, err := e2e.BuildUpstream()
		if unreachable != "" || err != nil {
			fmt.Fprintln(os.Stderr, "bench: cannot compare without upstream etcd:", unreachable, err)
			os.Exit(1)
		}
		*upstream = filepath.Join(dir, "etcd")
	}
	if *profDir != "" {
		if err := os.MkdirAll(*profDir, 0o755); err != nil {
			fail(err)
		}
	}
	all := map[string]part{
		"single": {"single", func(label, bin string, o options, round int) (sample, error) {
			dir := ""
			if round == 0 {
				dir = *profDir
			}
			return benchSingle(label, bin, o, dir)
		}},
		"cluster": {"cluster", func(label, bin string, o options, round int) (sample, error) {
			dir := ""
			if round == 0 {
				dir = *profDir
			}
			return benchCluster(label, bin, o, dir)
		}},
		"keys":  {"keys", func(label, bin string, o options, _ int) (sample, error) { return benchKeys(label, bin, o) }},
		"watch": {"watch", func(label, bin string, o options, _ int) (sample, error) { return benchWatchers(label, bin, o) }},
	}
	var chosen []part
	for _, name := range strings.Split(*parts, ",") {
		p, ok := all[strings.TrimSpace(name)]
		if !ok {
			fail(fmt.Errorf("unknown part %q in --parts", name))
		}
		chosen = append(chosen, p)
	}
	subjects := []subject{{"ours", *ours}, {"upstream " + upstreamVersion, *upstream}}
	// samples[label][round]; the order alternates by round so that neither side always runs on a
	// machine warmed (or tired) by the other.
	samples := map[string][]sample{}
	start := time.Now()
	for round := 0; round < *rounds; round++ {
		order := subjects
		if round%2 == 1 {
			order = []subject{subjects[1], subjects[0]}
		}
		for _, sub := range order {
			smp := newSample()
			for _, p := range chosen {
				fmt.Printf("== round %d: %s, %s\n", round+1, sub.label, p.name)
				got, err := p.run(sub.label, sub.bin, o, round)
				if err != nil {
					fail(fmt.Errorf("round %d, %s, %s: %w", round+1, sub.label, p.name, err))
				}
				smp.merge(got)
			}
			samples[sub.label] = append(samples[sub.label], smp)
		}
	}
	rep := report{subjects: subjects, samples: samples, o: o, rounds: *rounds, parts: *parts, took: time.Since(start),
		command: fmt.Sprintf("go run ./cmd/bench --ours %s --upstream <etcd %s built from the Go module proxy> --clients %d --conns %d --scale %d --rounds %d --parts %s --keys %d --watchers %d --events %d --catchup-bytes %d",
			*ours, upstreamVersion, o.clients, o.conns, o.scale, *rounds, *parts, o.keys, o.watchers, o.events, o.catchupBytes)}
	if err := os.WriteFile(*out, []byte(rep.markdown()+handWritten(*out)), 0o644); err != nil {
		fail(err)
	}
	fmt.Println("wrote", *out)
}

type subject struct{ label, bin string }
