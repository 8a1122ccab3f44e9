package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"etcdx/pkg/buildinfo"
	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/lab"
	"etcdx/upgradelab/plan"
	"etcdx/upgradelab/report"
	"etcdx/upgradelab/runtimes"
	"etcdx/upgradelab/traces"
	"etcdx/upgradelab/workload"
)

const usage = `upgradelab: drives real etcd clusters through upgrade and downgrade plans under a workload.

Usage:
  upgradelab run   [--plan NAME|FILE ...] [--members N ...] [--bin-dir DIR | --binary SUBJECT=PATH ...]
                   [--runtime auto|container|process|netns] [--max-stall DUR] [--max-failed N]
  upgradelab plan  [--from S] [--via S,...] [--to S] [--faults K,...] [--seed N] [--dry-run] [run flags]
                           generate a random plan from a seed and run it (or print it)
  upgradelab assess --to V [--endpoints URL,...] [--data-dir D ...] [--config FILE ...] [--plan-out FILE]
                           judge whether this cluster can go to V: every known blocker on the way,
                           with its fix and source, and the safe path (exit 1 when something blocks)
  upgradelab guide  --to V --endpoints URL,... [--mode in-place|replacement] [--step-timeout DUR] [--max-lag N]
                           walk the operator through the path to V on the live cluster: what to
                           do on which host, one member at a time, each step's gate checked
                           before the next (exit 1 when a gate fails, with what to do)
  upgradelab plans         list the built-in plans
  upgradelab clean [--all] remove containers, networks and volumes that killed runs left

Every run starts a fresh cluster (containers on a private Docker network, or local processes
where no engine answers), runs the plan's steps while clients write and read, judges the
availability of each step, then checks that no acknowledged write was lost and that the
history is linearizable. Exit status: 0 all runs passed, 1 a run failed, 2 bad usage.
`

// Main runs the command and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return run(args[1:], stdout, stderr)
	case "plans":
		return listPlans(stdout, stderr)
	case "clean":
		return clean(args[1:], stdout, stderr)
	case "plan":
		return planCmd(args[1:], stdout, stderr)
	case "assess":
		return assessCmd(args[1:], stdout, stderr)
	case "guide":
		return guideCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "upgradelab: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func listPlans(stdout, stderr io.Writer) int {
	plans, err := plan.Builtin()
	if err != nil {
		fmt.Fprintf(stderr, "upgradelab plans: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLAN\tMEMBERS\tSTART\tSTEPS\tDESCRIPTION")
	for _, p := range plans {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", p.Name, p.Members, p.Start, len(p.Steps), p.Description)
	}
	tw.Flush()
	return 0
}

func clean(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("upgradelab clean", pflag.ContinueOnError)
	all := fs.Bool("all", false, "Remove the resources of every lab run, live ones included.")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	n, err := runtimes.Clean(ctx, *all)
	fmt.Fprintf(stdout, "removed %s\n", n)
	if err != nil {
		fmt.Fprintf(stderr, "upgradelab clean: %v\n", err)
		return 1
	}
	return 0
}

type runFlags struct {
	preload       string
	shard         string
	matrix        string
	junit         string
	html          string
	progress      io.Writer // where resolve says what it builds
	generated     *plan.Plan
	runtime       string
	maxStall      time.Duration
	maxFailed     int
	plans         []string
	members       []int
	binDir        string
	binaryArgs    []string
	workDir       string
	report        string
	traceFile     string
	traceSampling float64
	clients       int
	interval      time.Duration
	timeout       time.Duration
	fromSnapshot  string
	user          string
}

// commonFlags registers what run and plan share: binaries, runtime, thresholds, output,
// workload.
func commonFlags(fs *pflag.FlagSet, f *runFlags) {
	fs.SortFlags = false
	fs.StringVar(&f.binDir, "bin-dir", "", "Directory whose etcd* binaries are used, each for the version and the level its --version reports.")
	fs.StringSliceVar(&f.binaryArgs, "binary", nil, "SUBJECT=PATH: the etcd binary for a level (3.5=/opt/etcd-3.5/etcd), a version (3.5.35=...) or a name plans use as a subject (upstream-3.5.35=...); overrides --bin-dir.")
	fs.StringVar(&f.runtime, "runtime", "auto", "Where members run: container (a Docker engine), process (local processes on loopback; no partitions), netns (local processes, each in a network namespace; root), or auto (containers when an engine answers, else processes, in namespaces when the plan partitions).")
	fs.DurationVar(&f.maxStall, "max-stall", 0, "Fail a run when any step stalls writes longer than this (0: no bound; a plan's thresholds win).")
	fs.IntVar(&f.maxFailed, "max-failed", 0, "Fail a run when more requests than this fail (0: no bound; a plan's thresholds win).")
	fs.StringVar(&f.matrix, "matrix", "", "A matrix file (YAML): subject sets x plans x sizes x seeds; each cell is a run (see docs/upgradelab.md).")
	fs.StringVar(&f.shard, "shard", "", "I/N: run only shard I of N of the runs (every N-th from the I-th), to fan a matrix out across CI jobs.")
	fs.StringVar(&f.workDir, "workdir", "", "Where runs keep data and logs (default: a new temporary directory).")
	fs.StringVar(&f.report, "report", "", "Write the JSON report here (default: WORKDIR/report.json).")
	fs.StringVar(&f.html, "html", "", "Write the summary page here, linking each run's own report.html (default: WORKDIR/report.html).")
	fs.StringVar(&f.junit, "junit", "", "Write JUnit XML here, a test case per plan x size x subject (default: WORKDIR/junit.xml).")
	fs.StringVar(&f.traceFile, "trace-file", "", "Write every run's OpenTelemetry spans (the lab's and the members') here as OTLP JSON, which Jaeger and Grafana Tempo import (default: WORKDIR/trace.json; each run's own is in its folder).")
	fs.Float64Var(&f.traceSampling, "trace-sampling", 0.01, "Share of workload requests traced through the members (0..1); the lab's own steps and the requests they make are always traced.")
	fs.StringVar(&f.preload, "preload", "0", "Data to write before the plan (e.g. 64MiB, in 1 KiB values), so members catching up need a database snapshot.")
	fs.StringVar(&f.fromSnapshot, "from-snapshot", "", "Rehearse on a copy of real data: restore this snapshot (etcdctl snapshot save), a stopped member's data dir or its member/snap/db into every member before it starts; the run also judges that the data and its users, roles and permissions came through unchanged.")
	fs.StringVar(&f.user, "user", "", "USER:PASSWORD of a user allowed everything (root) when the --from-snapshot data has authentication on: the workload and the steps act as it.")
	fs.IntVar(&f.clients, "clients", 4, "Concurrent workload clients.")
	fs.DurationVar(&f.interval, "interval", 10*time.Millisecond, "Pause between one client's operations.")
	fs.DurationVar(&f.timeout, "expect-timeout", 60*time.Second, "Default time an expect step waits.")
}

// parse parses a command's flags. pflag's own printing is silenced: the usage goes once to
// stdout on --help, an error once to stderr.
func parse(fs *pflag.FlagSet, args []string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage of %s:\n%s", fs.Name(), fs.FlagUsages())
			return 0, false
		}
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 2, false
	}
	return 0, true
}

func run(args []string, stdout, stderr io.Writer) int {
	var f runFlags
	fs := pflag.NewFlagSet("upgradelab run", pflag.ContinueOnError)
	fs.StringSliceVar(&f.plans, "plan", []string{"all"}, "Built-in plan names or plan files (YAML); 'all' runs every built-in plan.")
	fs.IntSliceVar(&f.members, "members", nil, "Cluster sizes to run each plan with (default: the plan's own). With several, every plan runs at every size.")
	commonFlags(fs, &f)
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	return f.run(fs, stdout, stderr)
}

// planCmd generates a plan from a seed and runs it (or only prints it, with --dry-run).
func planCmd(args []string, stdout, stderr io.Writer) int {
	var f runFlags
	var from, to string
	var via, faults []string
	var members int
	var seed uint64
	var rate float64
	var down, dry bool
	fs := pflag.NewFlagSet("upgradelab plan", pflag.ContinueOnError)
	fs.StringVar(&from, "from", "3.5", "The subject the cluster starts at.")
	fs.StringVar(&to, "to", "3.6", "The subject it is upgraded to.")
	fs.StringSliceVar(&via, "via", nil, "Subjects between, in order (patch hops such as 3.5.26).")
	fs.StringSliceVar(&faults, "faults", []string{"kill", "freeze", "add", "compact", "defrag"}, "Faults the plan may inject: kill, partition, freeze, add, compact, defrag (partition needs containers).")
	fs.Float64Var(&rate, "fault-rate", 0.5, "Chance of a fault after each member's replacement.")
	fs.BoolVar(&down, "downgrade", true, "When the last hop is one minor level up, downgrade back after it (then cancel or complete).")
	fs.IntVar(&members, "members", 3, "Cluster size.")
	fs.Uint64Var(&seed, "seed", 0, "Seed of the plan (0: a new random one, printed); the same seed replays the same plan.")
	fs.BoolVar(&dry, "dry-run", false, "Print the plan (numbered steps and YAML) without running it.")
	commonFlags(fs, &f)
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	bins, err := f.binaries(dry)
	if err != nil {
		fmt.Fprintf(stderr, "upgradelab plan: %v\n", err)
		return 2
	}
	if seed == 0 {
		seed = rand.Uint64N(1<<53) + 1 // stays exact in JSON readers that use doubles
	}
	g := plan.Generator{Seed: seed, Members: members, Path: append(append([]string{from}, via...), to),
		Levels: map[string]string{}, Downgrade: down, FaultRate: rate}
	for _, k := range faults {
		g.Faults = append(g.Faults, plan.StepKind(k))
	}
	for _, s := range g.Path {
		if cluster.IsLevel(s) {
			g.Levels[s] = s
		} else if b, ok := bins[s]; ok {
			g.Levels[s] = b.Level
		} else if cluster.IsVersion(s) {
			g.Levels[s] = s[:strings.LastIndexByte(s, '.')]
		}
	}
	p, err := g.Generate()
	if err != nil {
		fmt.Fprintf(stderr, "upgradelab plan: %v\n", err)
		return 2
	}
	if dry {
		b, _ := yaml.Marshal(p)
		fmt.Fprintf(stdout, "%s\n%s", p.Numbered(), b)
		return 0
	}
	f.generated = p
	return f.run(fs, stdout, stderr)
}

// run resolves the plans and binaries and runs every plan at every size.
func (f *runFlags) run(fs *pflag.FlagSet, stdout, stderr io.Writer) int {
	name := fs.Name()
	f.progress = stdout
	runs, bins, err := f.resolve(fs)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if f.workDir == "" {
		if f.workDir, err = os.MkdirTemp("", "upgradelab-"); err != nil {
			fmt.Fprintf(stderr, "upgradelab run: %v\n", err)
			return 1
		}
	}
	if err := os.MkdirAll(f.workDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "upgradelab run: --workdir: %v\n", err)
		return 1
	}
	if f.report == "" {
		f.report = filepath.Join(f.workDir, "report.json")
	}
	if f.traceFile == "" {
		f.traceFile = filepath.Join(f.workDir, "trace.json")
	}
	if f.junit == "" {
		f.junit = filepath.Join(f.workDir, "junit.xml")
	}
	if f.html == "" {
		f.html = filepath.Join(f.workDir, "report.html")
	}
	reports, err := execute(*f, runs, bins, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "upgradelab run: %v\n", err)
		return 1
	}
	passed, skipped := 0, 0
	for _, r := range reports {
		switch {
		case r.Skipped != "":
			skipped++
		case r.Passed:
			passed++
		}
	}
	fmt.Fprintf(stdout, "%d of %d runs passed, %d skipped; report %s, html %s, junit %s, trace %s\n", passed, len(reports)-skipped, skipped, f.report, f.html, f.junit, f.traceFile)
	if passed+skipped != len(reports) {
		return 1
	}
	return 0
}

// fetchReleases supplies subjects the lab fetches itself (upstream-X.Y.Z, debian-X.Y.Z) that no
// --binary gave, once per machine.
func (f *runFlags) fetchReleases(bins cluster.Binaries, subjects []string) error {
	for _, s := range subjects {
		if _, ok := cluster.FetchedSubject(s); !ok || bins[s].Path != "" {
			continue
		}
		path, err := f.fetch(s)
		if err != nil {
			return err
		}
		if err := bins.Add(s, path); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// fetch is cluster.Fetch, saying first what it fetches.
func (f *runFlags) fetch(subject string) (string, error) {
	if f.progress != nil {
		fmt.Fprintln(f.progress, cluster.FetchSource(subject))
	}
	return cluster.Fetch(subject)
}

// preloadBytes is --preload, checked by resolve.
func preloadBytes(s string) int64 {
	n, _ := humanize.ParseBytes(s)
	return int64(n)
}

// oneRun is a plan at a size.
type oneRun struct {
	plan    *plan.Plan
	members int
	// set and bins are the matrix's subject set and its binaries (bins nil: the flags').
	set  string
	bins cluster.Binaries
	// skip says why the cell cannot run ("" when it can).
	skip string
}

// shardOf keeps the cells of shard i of n (1-based): every n-th cell from the i-th, so a CI
// system can fan one matrix out across n jobs that together run each cell once.
func shardOf(runs []oneRun, i, n int) []oneRun {
	var out []oneRun
	for k, r := range runs {
		if k%n == i-1 {
			out = append(out, r)
		}
	}
	return out
}

// parseShard reads --shard i/n.
func parseShard(s string) (int, int, error) {
	var i, n int
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || n < 1 || i < 1 || i > n || fmt.Sprintf("%d/%d", i, n) != s {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 1 <= I <= N, e.g. 2/4", s)
	}
	return i, n, nil
}

// binaries reads --bin-dir and --binary; with quiet, binaries that do not answer --version
// are passed over (a dry run needs none).
func (f *runFlags) binaries(quiet bool) (cluster.Binaries, error) {
	bins := cluster.Binaries{}
	if f.binDir != "" {
		found, err := cluster.FromDir(f.binDir)
		if err != nil && !quiet {
			return nil, fmt.Errorf("--bin-dir: %w", err)
		}
		for k, v := range found {
			bins[k] = v
		}
	}
	for _, b := range f.binaryArgs {
		name, path, ok := strings.Cut(b, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--binary: want SUBJECT=PATH, got %q", b)
		}
		if err := bins.Add(name, path); err != nil && !quiet {
			return nil, fmt.Errorf("--binary %s: %w", b, err)
		}
	}
	return bins, nil
}

// resolve turns the flags into runs and binaries, reporting usage errors.
func (f *runFlags) resolve(fs *pflag.FlagSet) ([]oneRun, cluster.Binaries, error) {
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if f.matrix != "" {
		return f.resolveMatrix(fs)
	}
	var plans []*plan.Plan
	if f.generated != nil {
		plans, f.plans = []*plan.Plan{f.generated}, nil
	}
	for _, name := range f.plans {
		if name == "all" {
			all, err := plan.Builtin()
			if err != nil {
				return nil, nil, err
			}
			plans = append(plans, all...)
			continue
		}
		p, err := plan.Load(name)
		if err != nil {
			return nil, nil, fmt.Errorf("--plan: %w", err)
		}
		plans = append(plans, p)
	}
	var runs []oneRun
	for _, p := range plans {
		sizes := f.members
		if len(sizes) == 0 {
			sizes = []int{p.Members}
		}
		for _, n := range sizes {
			sized := *p
			sized.Members = n
			r := oneRun{plan: &sized, members: n}
			if err := sized.Validate(); err != nil {
				// A cell of the matrix that cannot run is reported, not fatal to the others.
				r.skip = fmt.Sprintf("cannot run at %d members: %v", n, err)
			}
			runs = append(runs, r)
		}
	}
	bins, err := f.binaries(false)
	if err != nil {
		return nil, nil, err
	}
	if runs, err = f.check(runs); err != nil {
		return nil, nil, err
	}
	for _, r := range runs {
		if r.skip != "" {
			continue
		}
		if err := f.fetchReleases(bins, r.plan.Subjects()); err != nil {
			return nil, nil, fmt.Errorf("plan %s: %w", r.plan.Name, err)
		}
		if err := bins.Need(r.plan.Subjects()); err != nil {
			return nil, nil, fmt.Errorf("plan %s: %w", r.plan.Name, err)
		}
	}
	return runs, bins, nil
}

// check validates the flags every way of naming runs shares, and keeps --shard's runs.
func (f *runFlags) check(runs []oneRun) ([]oneRun, error) {
	switch f.runtime {
	case "auto", "container", "process", "netns":
	default:
		return nil, fmt.Errorf("--runtime %q: want auto, container, process or netns", f.runtime)
	}
	if f.runtime == "process" {
		for _, r := range runs {
			for _, s := range r.plan.Steps {
				if err := runtimes.NewProcess("").Supports(s.Kind()); err != nil {
					return nil, fmt.Errorf("plan %s: %w", r.plan.Name, err)
				}
			}
		}
	}
	if _, err := humanize.ParseBytes(f.preload); err != nil {
		return nil, fmt.Errorf("--preload %q: %v", f.preload, err)
	}
	if f.fromSnapshot != "" {
		if _, _, err := (lab.Rehearsal{Snapshot: f.fromSnapshot}).Database(); err != nil {
			return nil, fmt.Errorf("--from-snapshot: %w", err)
		}

	}
	if f.user != "" && !strings.Contains(f.user, ":") {
		return nil, fmt.Errorf("--user %q: want USER:PASSWORD", f.user)
	}
	if f.maxStall < 0 || f.maxFailed < 0 {
		return nil, fmt.Errorf("--max-stall and --max-failed must not be negative")
	}
	if f.shard != "" {
		i, n, err := parseShard(f.shard)
		if err != nil {
			return nil, err
		}
		runs = shardOf(runs, i, n)
	}
	if f.traceSampling < 0 || f.traceSampling > 1 {
		return nil, fmt.Errorf("--trace-sampling %v: want a share from 0 to 1", f.traceSampling)
	}
	if f.clients < 1 {
		return nil, fmt.Errorf("--clients must be at least 1")
	}
	return runs, nil
}

// resolveMatrix turns --matrix into runs: every plan at every size for every subject set,
// each with that set's binaries (resolved only for sets this shard runs).
func (f *runFlags) resolveMatrix(fs *pflag.FlagSet) ([]oneRun, cluster.Binaries, error) {
	if fs.Changed("plan") || fs.Changed("members") || len(f.binaryArgs) > 0 {
		return nil, nil, fmt.Errorf("--matrix names the plans, sizes and binaries; drop --plan, --members and --binary")
	}
	m, err := LoadMatrix(f.matrix)
	if err != nil {
		return nil, nil, err
	}
	found, err := f.binaries(false)
	if err != nil {
		return nil, nil, err
	}
	plans, err := m.plans(m.levels(m.Sets()[0], found))
	if err != nil {
		return nil, nil, err
	}
	var runs []oneRun
	for _, p := range plans {
		sizes := m.Members
		if len(sizes) == 0 {
			sizes = []int{p.Members}
		}
		for _, n := range sizes {
			for _, set := range m.Sets() {
				sized := *p
				sized.Members = n
				r := oneRun{plan: &sized, members: n, set: set}
				if err := sized.Validate(); err != nil {
					r.skip = fmt.Sprintf("cannot run at %d members: %v", n, err)
				}
				runs = append(runs, r)
			}
		}
	}
	if runs, err = f.check(runs); err != nil {
		return nil, nil, err
	}
	sets := map[string]cluster.Binaries{}
	all := cluster.Binaries{}
	for i, r := range runs {
		if r.skip != "" {
			continue
		}
		bins, ok := sets[r.set]
		if !ok {
			if bins, err = m.binaries(r.set, found, f.fetch); err != nil {
				return nil, nil, err
			}
			sets[r.set] = bins
			for k, b := range bins {
				all[r.set+":"+k] = b
			}
		}
		if err := bins.Need(r.plan.Subjects()); err != nil {
			return nil, nil, fmt.Errorf("subject set %s, plan %s: %w", r.set, r.plan.Name, err)
		}
		runs[i].bins = bins
	}
	return runs, all, nil
}

func execute(f runFlags, runs []oneRun, bins cluster.Binaries, stdout, stderr io.Writer) ([]lab.Report, error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tracing, err := traces.Start(ctx, f.traceSampling)
	if err != nil {
		return nil, err
	}
	defer tracing.Close(context.WithoutCancel(ctx))
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := &lab.Runner{Binaries: bins, Runtime: f.runtime, WorkDir: f.workDir, Tracing: tracing, Logger: logger,
		Preload:    preloadBytes(f.preload),
		Thresholds: plan.Thresholds{MaxStall: plan.Duration(f.maxStall), MaxFailed: f.maxFailed}, Revision: buildinfo.GitSHA,
		Progress: stdout, StartTimeout: 60 * time.Second, ExpectTimeout: f.timeout, CheckTimeout: 2 * time.Minute,
		Warmup: 2 * time.Second, Settle: 2 * time.Second,
		Workload: workload.Config{Clients: f.clients, Interval: f.interval}}
	if f.fromSnapshot != "" {
		user, password, _ := strings.Cut(f.user, ":")
		runner.Rehearsal = &lab.Rehearsal{Snapshot: f.fromSnapshot, User: user, Password: password}
	}
	cells := make([]lab.Cell, len(runs))
	for i, r := range runs {
		cells[i] = lab.Cell{Plan: r.plan, Members: r.members, Set: r.set, Binaries: r.bins, Skip: r.skip}
	}
	campaign := &lab.Campaign{Runner: runner, Cells: cells, Progress: stdout, AfterRun: func(rep lab.Report) {
		if err := report.RunFiles(rep); err != nil {
			fmt.Fprintf(stderr, "upgradelab: %v\n", err)
		}
	}}
	reports := campaign.Run(ctx)
	return reports, report.Outputs{JSON: f.report, HTML: f.html, JUnit: f.junit, Trace: f.traceFile}.Write(reports)
}
