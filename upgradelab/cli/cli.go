// Package cli is the upgradelab command.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/lab"
	"etcdx/upgradelab/plan"
	"etcdx/upgradelab/workload"
)

const usage = `upgradelab: drives real etcd clusters through upgrade and downgrade plans under a workload.

Usage:
  upgradelab run   [--plan NAME|FILE ...] [--members N ...] [--bin-dir DIR | --binary LEVEL=PATH|NAME=PATH ...]
  upgradelab plans         list the built-in plans

Every run starts a fresh cluster of local processes on loopback ports, runs the plan's steps
while clients write and read, then checks that no acknowledged write was lost and that the
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

type runFlags struct {
	plans     []string
	members   []int
	binDir    string
	binaries  []string
	workDir   string
	report    string
	traceFile string
	clients   int
	interval  time.Duration
	timeout   time.Duration
}

func run(args []string, stdout, stderr io.Writer) int {
	var f runFlags
	fs := pflag.NewFlagSet("upgradelab run", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.StringSliceVar(&f.plans, "plan", []string{"all"}, "Built-in plan names or plan files (YAML); 'all' runs every built-in plan.")
	fs.IntSliceVar(&f.members, "members", nil, "Cluster sizes to run each plan with (default: the plan's own). With several, every plan runs at every size.")
	fs.StringVar(&f.binDir, "bin-dir", "", "Directory whose etcd* binaries are used, each for the level its --version reports.")
	fs.StringSliceVar(&f.binaries, "binary", nil, "LEVEL=PATH: the etcd binary for a level, e.g. 3.5=/opt/etcd-3.5/etcd (overrides --bin-dir); NAME=PATH: a binary plans name as a subject, e.g. upstream-3.5.17=/opt/etcd-v3.5.17/etcd.")
	fs.StringVar(&f.workDir, "workdir", "", "Where runs keep data and logs (default: a new temporary directory).")
	fs.StringVar(&f.report, "report", "", "Write the JSON report here (default: WORKDIR/report.json).")
	fs.StringVar(&f.traceFile, "trace-file", "", "Write OpenTelemetry spans here as JSON lines (default: WORKDIR/trace.json).")
	fs.IntVar(&f.clients, "clients", 4, "Concurrent workload clients.")
	fs.DurationVar(&f.interval, "interval", 10*time.Millisecond, "Pause between one client's operations.")
	fs.DurationVar(&f.timeout, "expect-timeout", 60*time.Second, "Default time an expect step waits.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "upgradelab run: %v\n", err)
		return 2
	}
	runs, bins, err := f.resolve(fs)
	if err != nil {
		fmt.Fprintf(stderr, "upgradelab run: %v\n", err)
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
	reports, err := execute(f, runs, bins, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "upgradelab run: %v\n", err)
		return 1
	}
	passed := 0
	for _, r := range reports {
		if r.Passed {
			passed++
		}
	}
	fmt.Fprintf(stdout, "%d of %d runs passed; report %s, trace %s\n", passed, len(reports), f.report, f.traceFile)
	if passed != len(reports) {
		return 1
	}
	return 0
}

// oneRun is a plan at a size.
type oneRun struct {
	plan    *plan.Plan
	members int
}

// resolve turns the flags into runs and binaries, reporting usage errors.
func (f *runFlags) resolve(fs *pflag.FlagSet) ([]oneRun, cluster.Binaries, error) {
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var plans []*plan.Plan
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
			if err := sized.Validate(); err != nil {
				return nil, nil, fmt.Errorf("--members %d: %w", n, err)
			}
			runs = append(runs, oneRun{plan: &sized, members: n})
		}
	}
	bins := cluster.Binaries{}
	if f.binDir != "" {
		found, err := cluster.FromDir(f.binDir)
		if err != nil {
			return nil, nil, fmt.Errorf("--bin-dir: %w", err)
		}
		bins = found
	}
	for _, b := range f.binaries {
		name, path, ok := strings.Cut(b, "=")
		if !ok || name == "" || path == "" {
			return nil, nil, fmt.Errorf("--binary: want LEVEL=PATH or NAME=PATH, got %q", b)
		}
		got, err := cluster.Level(path)
		if err != nil {
			return nil, nil, fmt.Errorf("--binary %s: %w", b, err)
		}
		// A level names the binary for that level; any other name (upstream-3.5.17) is a
		// subject of its own, of whatever level it reports.
		if cluster.IsLevel(name) && got != name {
			return nil, nil, fmt.Errorf("--binary %s: that binary is level %s", b, got)
		}
		bins[name] = path
	}
	for _, r := range runs {
		if err := bins.Need(r.plan.Subjects()); err != nil {
			return nil, nil, fmt.Errorf("plan %s: %w", r.plan.Name, err)
		}
	}
	if f.clients < 1 {
		return nil, nil, fmt.Errorf("--clients must be at least 1")
	}
	return runs, bins, nil
}

func execute(f runFlags, runs []oneRun, bins cluster.Binaries, stdout, stderr io.Writer) ([]lab.Report, error) {
	traceOut, err := os.Create(f.traceFile)
	if err != nil {
		return nil, fmt.Errorf("--trace-file: %w", err)
	}
	defer traceOut.Close()
	exp, err := stdouttrace.New(stdouttrace.WithWriter(traceOut))
	if err != nil {
		return nil, fmt.Errorf("trace exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("upgradelab"))))
	defer tp.Shutdown(context.Background())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := &lab.Runner{Binaries: bins, WorkDir: f.workDir, Tracer: tp.Tracer("etcdx/upgradelab"), Logger: logger,
		Progress: stdout, StartTimeout: 60 * time.Second, ExpectTimeout: f.timeout, CheckTimeout: 2 * time.Minute,
		Warmup: 2 * time.Second, Settle: 2 * time.Second,
		Workload: workload.Config{Clients: f.clients, Interval: f.interval}}
	var levels []string
	for l, p := range bins {
		levels = append(levels, l+"="+p)
	}
	sort.Strings(levels)
	fmt.Fprintf(stdout, "binaries: %s\nworkdir: %s\n", strings.Join(levels, " "), f.workDir)
	var reports []lab.Report
	for _, r := range runs {
		fmt.Fprintf(stdout, "=== %s, %d members, from %s\n", r.plan.Name, r.members, r.plan.Start)
		rep := runner.Run(ctx, r.plan, r.members)
		reports = append(reports, rep)
		verdict := "PASS"
		if !rep.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(stdout, "%s %s/%d in %.1fs: %d writes, %d reads, %d failed requests; %d of %d acknowledged writes lost; %d register operations: %s\n",
			verdict, rep.Plan, rep.Members, rep.Duration.Seconds(), rep.Writes, rep.Reads, rep.FailedOps,
			len(rep.LostWrites), rep.AckedWrites, rep.HistoryOps, rep.Linearizable)
		if !rep.Passed {
			fmt.Fprintf(stdout, "     %s\n     logs: %s\n", rep.Failure, rep.Dir)
		}
		if ctx.Err() != nil {
			break
		}
	}
	b, err := json.MarshalIndent(reports, "", "  ")
	if err != nil {
		return reports, err
	}
	if err := lab.WriteFile(f.report, b); err != nil {
		return reports, fmt.Errorf("--report: %w", err)
	}
	return reports, nil
}
