package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"etcdx/e2e"
	"etcdx/e2e/kubeload"
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

func printResult(label, name string, r result) {
	fmt.Printf("%-12s %-40s %8d ops %6d errors %10.0f ops/s  p50 %-10v p99 %-10v server CPU/op %v (%.0f%% of a CPU)  client CPU/op %v\n", label, name, r.ops, r.errors, r.rate(), r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.cpuPerOp(), 100*r.cpu.Seconds()/r.elapsed.Seconds(), r.clientCPUPerOp())
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

// part is one scenario each round runs for both implementations; subs is in the round's order.
type part struct {
	name string
	run  func(subs []subject, o options, round int) (map[string]sample, error)
	// throughput parts are short and noisy: they run --throughput-rounds rounds, the others --rounds
	throughput bool
	rounds     int // when set, the part's own number of rounds
}

// withRounds gives p its own number of rounds.
func withRounds(p part, rounds int) part {
	p.rounds = rounds
	return p
}

// oneAtATime makes a part of a scenario that needs the machine to itself: it runs fn for each
// implementation in turn. fn gets the directory for CPU profiles ("" for none).
func oneAtATime(name string, profileIn func(round int) string, fn func(label, bin string, o options, profDir string) (sample, error)) part {
	return part{name: name, run: func(subs []subject, o options, round int) (map[string]sample, error) {
		smps := map[string]sample{}
		for _, sub := range subs {
			fmt.Printf("-- %s: %s\n", name, sub.label)
			smp, err := fn(sub.label, sub.bin, o, profileIn(round))
			if err != nil {
				return smps, fmt.Errorf("%s: %w", sub.label, err)
			}
			smps[sub.label] = smp
		}
		return smps, nil
	}}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	if root := os.Getenv("TMPDIR"); root != "" && strings.HasPrefix(filepath.Base(root), tempRootPrefix) {
		os.RemoveAll(root) // the run's root (underTempRoot): os.Exit skips its deferred removal
	}
	os.Exit(1)
}

func main() {
	ours := flag.String("ours", "bin/etcd", "our etcd binary")
	upstream := flag.String("upstream", "", "upstream etcd binary (default: --upstream-version built from the Go module proxy)")
	upstreamAt := flag.String("upstream-version", e2e.CurrentUpstream, "upstream's release (\"v3.6.16\", or a line, \"3.6\", for its current patch release): the one built when --upstream is not given, and the report's label")
	out := flag.String("out", "docs/performance.md", "report path")
	var o options
	flag.IntVar(&o.clients, "clients", 64, "concurrent clients")
	flag.IntVar(&o.conns, "conns", 8, "gRPC connections shared by the clients")
	flag.IntVar(&o.scale, "scale", 1, "multiplies the operation counts of the throughput workloads")
	flag.DurationVar(&o.limit, "limit", 60*time.Second, "time limit per workload")
	flag.Int64Var(&o.catchupBytes, "catchup-bytes", 1<<30, "data a new member must catch up with")
	flag.IntVar(&o.keys, "keys", 1000000, "keys (256 B values) of the memory and compaction figures")
	flag.Int64Var(&o.defragBytes, "defrag-bytes", 2<<30, "data the defrag part writes before it frees half of it and defragments")
	flag.IntVar(&o.bigReadObjects, "bigread-objects", bigReadObjects, "10 KiB objects the bigread part writes and reads back")
	flag.IntVar(&o.startupKeys, "startup-keys", 5000000, "keys of the data dir the startup part starts a member on")
	flag.Int64Var(&o.startupBytes, "startup-bytes", 4<<30, "their size in all")
	flag.IntVar(&o.offeredPut, "offered-put", 6000, "open-loop rate of puts (requests/s)")
	flag.IntVar(&o.offeredTxn, "offered-txn", 5600, "open-loop rate of txns")
	flag.IntVar(&o.offeredGet, "offered-get", 10000, "open-loop rate of linearizable gets")
	flag.IntVar(&o.offeredSerializable, "offered-serializable", 11000, "open-loop rate of serializable gets")
	flag.IntVar(&o.offered3Put, "offered3-put", 3300, "open-loop rate of puts to three members")
	flag.IntVar(&o.offered3Txn, "offered3-txn", 3000, "open-loop rate of txns to three members")
	flag.IntVar(&o.offered3Get, "offered3-get", 6800, "open-loop rate of linearizable gets from three members")
	flag.IntVar(&o.offered3Serializable, "offered3-serializable", 8000, "open-loop rate of serializable gets from three members")
	flag.DurationVar(&o.offeredFor, "offered-for", 10*time.Second, "how long each open-loop rate is offered")
	flag.IntVar(&o.pinCPU, "pin-member-cpu", -1, "run the single and offered parts' members on this one CPU with GOMAXPROCS=1, and the bench's clients on the other CPUs")
	flag.IntVar(&o.watchers, "watchers", 10000, "watchers of the watch delivery figure")
	flag.IntVar(&o.events, "events", 100, "puts each watcher receives")
	var ko kubeOptions
	ko.shape.Flags(flag.CommandLine, kubeload.Defaults(0))
	flag.IntVar(&ko.start, "kube-start", 1000, "the kube part's first N (nodes)")
	flag.Float64Var(&ko.factor, "kube-factor", 1.5, "each next N of the kube part is this times the last")
	flag.IntVar(&ko.most, "kube-most", 20000, "the kube part's largest N")
	flag.DurationVar(&ko.window, "kube-window", time.Minute, "each N's measured window")
	flag.DurationVar(&ko.warmup, "kube-warmup", 20*time.Second, "the load run unmeasured before each window (what adding nodes left behind settles)")
	flag.IntVar(&ko.bisect, "kube-bisect", 3, "probes, each on a fresh cluster, between the last N that held and the first that missed")
	flag.IntVar(&ko.rounds, "kube-rounds", 1, "rounds of the kube part (each about half an hour per implementation)")
	parts := flag.String("parts", "single,onecpu,offered,offered3,cluster,availability,keys,watch,defrag,bigread,startup,kube", "which parts to run: kube (the largest Kubernetes cluster, in nodes, three members carry within Kubernetes' SLOs: docs/kube-shape.md's load, stepped up), single (one member's throughput), onecpu (one member's write throughput on one CPU with GOMAXPROCS=1, the clients on the others), offered (one member's CPU per request and latency at a fixed open-loop rate), offered3 (the same on three members, all members' CPU), cluster (three members' throughput), availability (rolling restart, catch-up), keys (memory per key, compaction pause), watch (watch delivery), defrag (online defrag under load, offline etcdutl defrag), bigread (memory serving 1 GiB: RangeStream, paginated and unary Range), startup (time until a member on a big data dir serves)")
	rounds := flag.Int("rounds", 3, "rounds of the availability, keys and watch parts, alternating which implementation goes first")
	upstreamFirst := flag.Bool("upstream-first", false, "upstream goes first in the first round (a one-round run of a long part, such as kube, otherwise always starts with ours)")
	throughputRounds := flag.Int("throughput-rounds", 7, "rounds of the single and cluster parts")
	profDir := flag.String("pprof", "", "save CPU profiles of both implementations' single-member, open-loop, three-member and Kubernetes-shaped (each window's start, every member, with what it allocated) workloads (with --pin-member-cpu also execution traces of the single-member ones) and of the watch delivery and the bigread reads, and an execution trace of the compaction's start with its slow requests (first round), in this directory")
	flag.DurationVar(&o.profileFor, "pprof-seconds", 3*time.Second, "length of each CPU profile")
	flag.DurationVar(&o.traceFor, "trace-seconds", 0, "with --pprof, also an execution trace this long (go tool trace) of every member in the offered and offered3 parts, taken with its CPU profile: which goroutines block and wake per request")
	flag.Parse()
	// A run takes up to hours: a report path it cannot write fails now, not at the end.
	if f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE, 0o644); err != nil {
		fail(fmt.Errorf("report path: %w", err))
	} else {
		f.Close()
	}
	if o.pinCPU >= 0 {
		var others []string
		for c := 0; c < runtime.NumCPU(); c++ {
			if c != o.pinCPU {
				others = append(others, fmt.Sprint(c))
			}
		}
		if len(others) == 0 {
			fail(fmt.Errorf("--pin-member-cpu %d leaves no CPU for the clients", o.pinCPU))
		}
		if err := pin(os.Getpid(), strings.Join(others, ",")); err != nil {
			fail(err)
		}
	}
	upstreamVersion := *upstreamAt
	if v := e2e.UpstreamOfLine(upstreamVersion); v != "" {
		upstreamVersion = v
	}
	if *upstream == "" {
		dir, unreachable, err := e2e.BuildUpstream(upstreamVersion)
		if unreachable != "" || err != nil {
			fmt.Fprintln(os.Stderr, "bench: cannot compare without upstream etcd:", unreachable, err)
			os.Exit(1)
		}
		*upstream = filepath.Join(dir, "etcd")
	}
	done, err := underTempRoot()
	if err != nil {
		fail(err)
	}
	defer done()
	if *profDir != "" {
		if err := os.MkdirAll(*profDir, 0o755); err != nil {
			fail(err)
		}
	}
	// The profiles are of the first round only.
	profileIn := func(round int) string {
		if round == 0 {
			return *profDir
		}
		return ""
	}
	startup := &startupData{}
	defer startup.remove()
	all := map[string]part{
		"single": {name: "single", throughput: true, run: func(subs []subject, o options, round int) (map[string]sample, error) {
			return benchSingle(subs, o, profileIn(round))
		}},
		"onecpu": {name: "onecpu", throughput: true, run: func(subs []subject, o options, round int) (map[string]sample, error) {
			return benchOneCPU(subs, o, profileIn(round))
		}},
		"offered": {name: "offered", throughput: true, run: func(subs []subject, o options, round int) (map[string]sample, error) {
			return benchOffered(subs, o, profileIn(round))
		}},
		"offered3": {name: "offered3", throughput: true, run: func(subs []subject, o options, round int) (map[string]sample, error) {
			return benchOffered3(subs, o, profileIn(round))
		}},
		"cluster": {name: "cluster", throughput: true, run: func(subs []subject, o options, round int) (map[string]sample, error) {
			return benchCluster(subs, o, profileIn(round))
		}},
		"availability": oneAtATime("availability", profileIn, func(label, bin string, o options, _ string) (sample, error) {
			return benchAvailability(label, bin, o)
		}),
		"keys":    oneAtATime("keys", profileIn, benchKeys),
		"watch":   oneAtATime("watch", profileIn, benchWatchers),
		"defrag":  oneAtATime("defrag", profileIn, benchDefrag),
		"bigread": oneAtATime("bigread", profileIn, benchBigRead),
		"startup": oneAtATime("startup", profileIn, benchStartup(startup)),
		"kube":    withRounds(oneAtATime("kube", profileIn, benchKube(ko)), ko.rounds),
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
	// samples[label][round]. Each part runs both implementations before the next part starts,
	// and the order alternates by round, so that neither side always runs on a machine warmed
	// (or tired) by the other.
	samples := map[string][]sample{}
	start := time.Now()
	for round := 0; round < max(*rounds, *throughputRounds); round++ {
		order := subjects
		if (round%2 == 1) != *upstreamFirst {
			order = []subject{subjects[1], subjects[0]}
		}
		got := map[string]sample{}
		for _, sub := range order {
			got[sub.label] = newSample()
		}
		for _, p := range chosen {
			last := *rounds
			if p.throughput {
				last = *throughputRounds
			}
			if p.rounds > 0 {
				last = p.rounds
			}
			if round >= last {
				continue
			}
			fmt.Printf("== round %d: %s\n", round+1, p.name)
			smps, err := p.run(order, o, round)
			if err != nil {
				fail(fmt.Errorf("round %d, %s: %w", round+1, p.name, err))
			}
			for label, smp := range smps {
				got[label].merge(smp)
			}
		}
		for _, sub := range subjects {
			samples[sub.label] = append(samples[sub.label], got[sub.label])
		}
	}
	rep := report{subjects: subjects, samples: samples, o: o, kube: ko, rounds: *rounds, throughputRounds: *throughputRounds, parts: *parts, took: time.Since(start),
		command: fmt.Sprintf("go run ./cmd/bench --ours %s --upstream-version %s --clients %d --conns %d --scale %d --rounds %d --throughput-rounds %d --parts %s --keys %d --watchers %d --events %d --catchup-bytes %d --defrag-bytes %d --bigread-objects %d --startup-keys %d --startup-bytes %d --offered-put %d --offered-txn %d --offered-get %d --offered-serializable %d --offered3-put %d --offered3-txn %d --offered3-get %d --offered3-serializable %d --offered-for %v --pin-member-cpu %d --kube-start %d --kube-factor %.2f --kube-bisect %d --kube-warmup %v --kube-window %v --kube-rounds %d",
			*ours, upstreamVersion, o.clients, o.conns, o.scale, *rounds, *throughputRounds, *parts, o.keys, o.watchers, o.events, o.catchupBytes, o.defragBytes, o.bigReadObjects, o.startupKeys, o.startupBytes,
			o.offeredPut, o.offeredTxn, o.offeredGet, o.offeredSerializable, o.offered3Put, o.offered3Txn, o.offered3Get, o.offered3Serializable, o.offeredFor, o.pinCPU, ko.start, ko.factor, ko.bisect, ko.warmup, ko.window, ko.rounds)}
	if *upstreamFirst {
		rep.command += " --upstream-first"
	}
	if err := os.WriteFile(*out, []byte(keepUnmeasured(rep.markdown(), *out)+handWritten(*out)), 0o644); err != nil {
		fail(err)
	}
	fmt.Println("wrote", *out)
}

type subject struct{ label, bin string }
