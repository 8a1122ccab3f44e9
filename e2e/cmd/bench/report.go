package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// handMarker starts the part of the report that people write (measurements made by other
// commands, such as the upgrade lab's); the bench keeps it when it rewrites the file.
const handMarker = "<!-- make bench keeps everything below this line -->"

// handWritten is the kept part of the report at path, marker included ("" when there is none).
func handWritten(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(b), handMarker); i >= 0 {
		return "\n" + string(b[i:])
	}
	return ""
}

// sectionOrder is the order of the report's sections.
var sectionOrder = []string{"## Throughput and latency", "## One member at a fixed offered load", "## Three members at a fixed offered load", "## Memory, scale and availability", "## Kubernetes-shaped load"}

// sections splits a report's generated part into its header and its "## " sections by heading.
func sections(doc string) (header string, secs map[string]string) {
	secs = map[string]string{}
	parts := strings.Split(doc, "\n## ")
	header = parts[0] + "\n"
	for _, p := range parts[1:] {
		heading, _, _ := strings.Cut(p, "\n")
		secs["## "+heading] = "\n## " + p
	}
	return header, secs
}

// keepUnmeasured is doc with the sections of the report at path that this run did not
// measure (a run of some parts only) kept, in the report's order, each under its own run's line.
func keepUnmeasured(doc, path string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return doc
	}
	oldGen, _, _ := strings.Cut(string(old), handMarker)
	header, secs := sections(doc)
	_, oldSecs := sections(oldGen)
	var b strings.Builder
	b.WriteString(strings.TrimRight(header, "\n") + "\n")
	for _, prefix := range sectionOrder {
		for _, from := range []map[string]string{secs, oldSecs} {
			found := false
			for heading, sec := range from {
				if strings.HasPrefix(heading, prefix) {
					// The kube section's tables are one run's steps: never mixed with another's.
					if old, ok := oldSecs[heading]; ok && from[heading] != old && !strings.HasPrefix(heading, "## Kubernetes-shaped load") {
						sec = keepUnmeasuredRows(sec, old)
					}
					b.WriteString(strings.TrimRight(sec, "\n") + "\n")
					found = true
				}
			}
			if found {
				break
			}
		}
	}
	return b.String()
}

// keptTag marks a table row kept from an earlier run, with that run's time.
const keptTag = " <sup>run of "

// keepUnmeasuredRows is the section sec with the table rows of old's that sec lacks (a run of
// some parts measures some workloads of a table only) added after its own, each tagged with the
// run it comes from, so a partial run replaces its rows and no other.
func keepUnmeasuredRows(sec, old string) string {
	rowName := func(line string) string {
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		name, _, _ = strings.Cut(name, keptTag)
		return name
	}
	isRow := func(line string) bool {
		return strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| workload |") && !strings.HasPrefix(line, "| figure |") && !strings.HasPrefix(line, "| N |")
	}
	lines := strings.Split(strings.TrimRight(sec, "\n"), "\n")
	have, last := map[string]bool{}, -1
	for i, l := range lines {
		if isRow(l) {
			have[rowName(l)], last = true, i
		}
	}
	if last < 0 {
		return sec
	}
	oldRun := ""
	for _, l := range strings.Split(old, "\n") {
		if rest, ok := strings.CutPrefix(l, "Run of "); ok {
			oldRun, _, _ = strings.Cut(rest, " UTC")
			break
		}
	}
	var kept []string
	for _, l := range strings.Split(old, "\n") {
		if !isRow(l) || have[rowName(l)] {
			continue
		}
		if !strings.Contains(l, keptTag) && oldRun != "" {
			name := rowName(l)
			l = "| " + name + keptTag + oldRun + "</sup>" + strings.TrimPrefix(l, "| "+name)
		}
		kept = append(kept, l)
	}
	if len(kept) == 0 {
		return sec
	}
	out := append(append(append([]string{}, lines[:last+1]...), kept...), lines[last+1:]...)
	return strings.Join(out, "\n") + "\n"
}

// figure is how the report shows one single figure.
type figure struct {
	key, title string
	format     func(float64) string
	// total: the row shows the sum over rounds instead of the median.
	total bool
}

func mib(x float64) string   { return fmt.Sprintf("%.1f MiB", x/(1<<20)) }
func bytes(x float64) string { return fmt.Sprintf("%.0f B", x) }
func count(x float64) string { return fmt.Sprintf("%.0f", x) }
func dur(ns float64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// figures are the single figures in report order; all are better lower.
var figures = []figure{
	{key: figPeakRSS, title: "peak resident memory (VmHWM) after the single-member workloads", format: mib},
	{key: figBytesPerKey, title: "resident memory per key, 1 million keys of 256 B", format: bytes},
	{key: figCompactPause, title: "longest request during a compaction of 1 million superseded revisions", format: dur},
	{key: figCompactTook, title: "compaction of 1 million superseded revisions (physical)", format: dur},
	{key: figWatchP99, title: "watch delivery p99", format: dur},
	{key: figWatchMax, title: "watch delivery, slowest", format: dur},
	{key: figRollStall, title: "rolling restart of 3 members: longest write stall", format: dur},
	{key: figRollMaxLat, title: "rolling restart: slowest successful write", format: dur},
	{key: figRollFailed, title: "rolling restart: failed writes", format: count},
	{key: figSlowestStop, title: "rolling restart: slowest stop after SIGTERM", format: dur},
	{key: figCatchup, title: "new member catching up (the limit when it did not)", format: dur},
	{key: figDefragStall, title: "online defrag under load: longest request overlapping it", format: dur},
	{key: figDefragTook, title: "online defrag under load: its time", format: dur},
	{key: figDefragAfter, title: "online defrag: file size after it", format: mib},
	{key: figDefragFailed, title: "online defrag: failed requests", format: count, total: true},
	{key: figOfflineDefrag, title: "offline `etcdutl defrag` of the same data dir, a quarter more freed", format: dur},
	{key: figStreamPeak, title: "serving 1 GiB by RangeStream: peak resident memory growth", format: mib},
	{key: figPagedPeak, title: "serving 1 GiB by a paginated Range: peak resident memory growth", format: mib},
	{key: figUnaryPeak, title: "serving 1 GiB by one unary Range: peak resident memory growth", format: mib},
	{key: figPagedListDur, title: "paginated LIST (pages of 500) of 100,000 objects of 10 KiB: its time", format: dur},
	{key: figStartup, title: "start-up on a big data dir: time until it serves", format: dur},
	{key: figStartupRSS, title: "start-up on a big data dir: peak resident memory", format: mib},
	{key: figCatchupStuck, title: "rounds in which the new member did not catch up within " + catchupLimit.String(), format: count, total: true},
}

type report struct {
	subjects []subject
	samples  map[string][]sample
	o        options
	kube     kubeOptions
	rounds   int
	// throughputRounds are the rounds of the single and cluster parts
	throughputRounds int
	parts            string
	command          string
	took             time.Duration
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratios are each round's ours/upstream, formatted.
func ratios(o, u []float64) string {
	var rs []string
	for i := range o {
		if i < len(u) && u[i] != 0 {
			rs = append(rs, fmt.Sprintf("%.2f", o[i]/u[i]))
		}
	}
	return strings.Join(rs, ", ")
}

func ratio(o, u float64) string {
	if u == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", o/u)
}

func (r report) markdown() string {
	ours, up := r.subjects[0].label, r.subjects[1].label
	var b strings.Builder
	fmt.Fprintf(&b, "# Performance\n\n")
	fmt.Fprintf(&b, "Measured by `make bench` (the run of each section is named under its heading; a run of some parts keeps the other sections as they were): %d CPUs, %s/%s, %s, loopback; ours and %s with the same flags,\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), up)
	fmt.Fprintf(&b, "fresh members for every part of every round, %d rounds of the throughput parts and %d of the others. Each part runs both implementations before the next starts. In the throughput parts both implementations' members run side by side (the idle one only ticks), and each workload runs on one and at once on the other; which goes first alternates from workload to workload and from round to round. The other parts run one implementation at a time, the first alternating by round.\n", r.throughputRounds, r.rounds)
	fmt.Fprintf(&b, "Figures are medians over the rounds; the ratio is ours/upstream of the medians, followed by each round's ratio. For ops/s above 1 is ours faster; for latencies, memory and times below 1 is ours better.\n")
	fmt.Fprintf(&b, "\nThe machine is a shared 2-core virtual machine, and the bench's clients run on it too; the per-round ratios show how much the figures move within one run. Compare ratios of one run, not runs with each other.\n")
	runLine := fmt.Sprintf("Run of %s (%v in all%s), in `e2e/`: `%s`\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.took.Round(time.Minute), onCPU(cpuModel()), r.command)
	// results of one workload name across rounds
	pick := func(label, name string, f func(result) float64) []float64 {
		var xs []float64
		for _, s := range r.samples[label] {
			if res, ok := s.results[name]; ok {
				xs = append(xs, f(res))
			}
		}
		return xs
	}
	var names []string
	for _, w := range slices.Concat(singleWorkloads(r.o.scale), oneCPUWorkloads(r.o.scale), clusterWorkloads(r.o.scale)) {
		if len(pick(ours, w.name, func(result) float64 { return 0 })) > 0 {
			names = append(names, w.name)
		}
	}
	// The open-loop workloads have tables of their own: a run of one part then replaces its
	// table whole instead of mixing its rows into another run's.
	var names1 []string
	for _, w := range offeredWorkloads(r.o) {
		if len(pick(ours, offeredName(w), func(result) float64 { return 0 })) > 0 {
			names1 = append(names1, offeredName(w))
		}
	}
	var names3 []string
	for _, w := range offered3Workloads(r.o) {
		if len(pick(ours, offeredName(w), func(result) float64 { return 0 })) > 0 {
			names3 = append(names3, offeredName(w))
		}
	}
	tableHead := "| workload | ops | ours ops/s | upstream ops/s | ratio (rounds) | ours p50 | upstream p50 | p50 ratio | ours p99 | upstream p99 | p99 ratio (rounds) | server CPU/op ours | upstream | CPU ratio (rounds) | client CPU/op | ceiling | errors (ours/upstream) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
	row := func(n string) string {
		cpu := func(x result) float64 { return float64(x.cpuPerOp()) }
		clientCPU := func(x result) float64 { return float64(x.clientCPUPerOp()) }
		rate := func(x result) float64 { return x.rate() }
		p50 := func(x result) float64 { return float64(x.p50) }
		p99 := func(x result) float64 { return float64(x.p99) }
		errs := func(x result) float64 { return float64(x.errors) }
		ops := func(x result) float64 { return float64(x.ops) }
		or, ur := pick(ours, n, rate), pick(up, n, rate)
		o50, u50 := median(pick(ours, n, p50)), median(pick(up, n, p50))
		o99, u99 := pick(ours, n, p99), pick(up, n, p99)
		oc, uc := pick(ours, n, cpu), pick(up, n, cpu)
		cc := median(append(pick(ours, n, clientCPU), pick(up, n, clientCPU)...))
		return fmt.Sprintf("| %s | %.0f | %.0f | %.0f | %s (%s) | %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s (%s) | %s | %s | %.0f/%.0f |\n", n, median(pick(ours, n, ops)),
			median(or), median(ur), ratio(median(or), median(ur)), ratios(or, ur),
			dur(o50), dur(u50), ratio(o50, u50),
			dur(median(o99)), dur(median(u99)), ratio(median(o99), median(u99)), ratios(o99, u99),
			dur(median(oc)), dur(median(uc)), ratio(median(oc), median(uc)), ratios(oc, uc),
			dur(cc), ratio(cc+median(uc), cc),
			sumOf(pick(ours, n, errs)), sumOf(pick(up, n, errs)))
	}
	if len(names) > 0 {
		fmt.Fprintf(&b, "\n## Throughput and latency\n\n%s", runLine)
		fmt.Fprintf(&b, "%d clients over %d gRPC connections (upstream's Go client) unless the workload says otherwise; three-member workloads spread the connections over the members. ", r.o.clients, r.o.conns)
		fmt.Fprintf(&b, "Server CPU/op is the CPU time (user and system, from /proc) the member processes used during the workload per successful request, all three members' for the three-member rows. The clients run in the bench process on the same 2 CPUs: client CPU/op is that process's CPU time per request (median over both implementations' rounds), and the ceiling is the throughput ratio ours would reach if our servers used no CPU at all while the CPUs stay busy, (client + upstream server CPU/op) / client CPU/op. A server-side saving moves throughput by its share of the whole. The one-CPU rows run the writes on members limited to one CPU (GOMAXPROCS=1, every thread pinned to the last CPU), the clients on the others, as a container with a one-CPU limit.\n\n")
		b.WriteString(tableHead)
		for _, n := range names {
			b.WriteString(row(n))
		}
	}
	// A table of its own for each part at a fixed offered load: a run of one part replaces its
	// table whole.
	offeredTable := func(heading, intro string, names []string) {
		if len(names) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s%s", heading, runLine, intro)
		b.WriteString(tableHead)
		for _, n := range names {
			b.WriteString(row(n))
		}
	}
	offeredTable("One member at a fixed offered load", fmt.Sprintf("The open-loop workloads offer requests to one member at a fixed rate, the same for both implementations, for %v each (one due every 1/rate s, sent by the next free client of %d over %d connections; latency from when it was due): ops/s is the rate achieved, and server CPU/op is the figure that compares the servers' efficiency, since the load generator's share of the 2 CPUs is then the same for both. Columns as in the throughput table.\n\n", r.o.offeredFor, r.o.clients, r.o.conns), names1)
	offeredTable("Three members at a fixed offered load", fmt.Sprintf("The open-loop workloads offered to a three-member cluster of each implementation (both clusters running side by side, the idle one ticking), %d clients over %d connections spread over the members, %v per rate: server CPU/op is all three members' CPU per request, the leader's and the followers' (replication, their WAL, their applies), at the same offered load on both sides. Columns as in the throughput table.\n\n", r.o.clients, r.o.conns, r.o.offeredFor), names3)
	values := func(label, key string) []float64 {
		var xs []float64
		for _, s := range r.samples[label] {
			if v, ok := s.values[key]; ok {
				xs = append(xs, v)
			}
		}
		return xs
	}
	var rows []string
	for _, f := range figures {
		ov, uv := values(ours, f.key), values(up, f.key)
		if len(ov) == 0 {
			continue
		}
		if f.total {
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | - |", f.title, f.format(sumOf(ov)), f.format(sumOf(uv))))
			continue
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s (%s) |", f.title, f.format(median(ov)), f.format(median(uv)), ratio(median(ov), median(uv)), ratios(ov, uv)))
	}
	if len(rows) > 0 {
		fmt.Fprintf(&b, "\n## Memory, scale and availability\n\n%s", runLine)
		fmt.Fprintf(&b, "Lower is better in every row. Memory per key is the growth of resident memory (VmRSS) while %d keys are written in transactions of 100 puts, divided by the keys. ", r.o.keys)
		fmt.Fprintf(&b, "The compaction rewrites every key once more and compacts the first writes away (physical compaction) while 8 clients put and get; its row is their slowest request. ")
		fmt.Fprintf(&b, "Watch delivery: %d watchers of one prefix over 10 connections, %d puts 10 ms apart, latency from before each put to its arrival at each watcher. ", r.o.watchers, r.o.events)
		fmt.Fprintf(&b, "The rolling restart sends SIGTERM to each of three members in turn under 8 writers (10 s timeout) and starts it again; the stall is the longest gap between two successful writes. ")
		fmt.Fprintf(&b, "Catch-up: after %d MiB in 64 KiB values, a member added with `member add` starts, timed until it serves every key (serializable count). ", r.o.catchupBytes>>20)
		fmt.Fprintf(&b, "Defrag: %d MiB written in %d KiB values, every other key deleted and compacted away (about half the file free), then `Defragment` while 8 clients put (256 B) and get; the longest of their requests that overlapped the defrag is its stall; HashKV before and after must agree. Then another quarter of the keys is deleted and compacted, the member stopped, and the implementation's own `etcdutl defrag --data-dir` timed. ", r.o.defragBytes>>20, defragValueSize>>10)
		fmt.Fprintf(&b, "Big reads: %d objects of %d KiB written, the member restarted, then each read once; the peak resident memory (VmHWM, reset before each through /proc/PID/clear_refs) less the resident memory just before; the paginated Range asks pages of %d at the first page's revision, as kube-apiserver lists. ", r.o.bigReadObjects, bigReadValue>>10, bigReadPage)
		fmt.Fprintf(&b, "Start-up: a data dir of %d keys (%.1f GiB, written straight into bbolt in upstream's layout and restored by etcdutl), copied for each start; the time from the process's start until a serializable get of the last key answers.\n\n", r.o.startupKeys, float64(r.o.startupBytes)/(1<<30))
		fmt.Fprintf(&b, "| figure | ours | upstream | ratio (rounds) |\n|---|---|---|---|\n")
		b.WriteString(strings.Join(rows, "\n") + "\n")
	}
	b.WriteString(r.kubeMarkdown(values, runLine))
	return b.String()
}

func sumOf(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

// cpuModel is the machine's processor as /proc/cpuinfo names it ("" where it does not): the
// ratios of one run move with the machine a session gets (docs/performance.md).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func onCPU(model string) string {
	if model == "" {
		return ""
	}
	return ", on " + model
}
