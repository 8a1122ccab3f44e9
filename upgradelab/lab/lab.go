package lab

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"etcdx/pkg/judge"
	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/plan"
	"etcdx/upgradelab/runtimes"
	"etcdx/upgradelab/traces"
	"etcdx/upgradelab/workload"
)

// Runner holds what every run shares.
type Runner struct {
	Binaries cluster.Binaries
	// Runtime is "container", "process", "netns" or "auto" (see runtimes.New).
	Runtime string
	// WorkDir gets one directory per run (members' data, logs and the run's report).
	WorkDir  string
	Workload workload.Config
	// Tracing receives the lab's spans and the members'; nil: no tracing.
	Tracing *traces.Setup
	Logger  *slog.Logger
	// Progress receives the plan, a line per step as it ends and, while a step waits, a
	// progress line every few seconds (may be nil).
	Progress io.Writer
	// StartTimeout bounds the first start and every restart; ExpectTimeout is the default of
	// expect steps; CheckTimeout bounds the linearizability check.
	StartTimeout  time.Duration
	ExpectTimeout time.Duration
	CheckTimeout  time.Duration
	// Warmup and Settle let the workload run before the first step and after the last, so
	// every step happens under traffic and the final state is exercised too.
	Warmup time.Duration
	Settle time.Duration
	// Thresholds apply where the plan sets none.
	Thresholds plan.Thresholds
	// Revision is the lab's own build (git revision), recorded in reports.
	Revision string
	// Preload is how many bytes of data to write before the plan (0: none).
	Preload int64
	// Rehearsal starts every run from a copy of real data (nil: an empty cluster).
	Rehearsal *Rehearsal
}

// Report is the outcome of one run.
type Report struct {
	Plan string `json:"plan"`
	// Subjects names the matrix's subject set the run used ("" outside a matrix).
	Subjects  string                    `json:"subjects,omitempty"`
	Members   int                       `json:"members"`
	Seed      uint64                    `json:"seed,omitempty"`
	Runtime   string                    `json:"runtime"`
	Dir       string                    `json:"dir"`
	StartedAt time.Time                 `json:"startedAt"`
	EndedAt   time.Time                 `json:"endedAt"`
	Binaries  map[string]cluster.Binary `json:"binaries"`
	Revision  string                    `json:"labRevision"`
	Passed    bool                      `json:"passed"`
	// Skipped says why a cell of the matrix did not run ("" when it ran).
	Skipped  string        `json:"skipped,omitempty"`
	Failure  string        `json:"failure,omitempty"`
	Duration time.Duration `json:"durationNs"`
	Steps    []StepReport  `json:"steps"`

	Thresholds   plan.Thresholds       `json:"thresholds"`
	Availability workload.Availability `json:"availability"`

	Writes       int            `json:"writes"`
	Reads        int            `json:"reads"`
	FailedOps    int            `json:"failedOps"`
	Errors       map[string]int `json:"errors,omitempty"`
	AckedWrites  int            `json:"ackedWrites"`
	LostWrites   []string       `json:"lostWrites"`
	HistoryOps   int            `json:"historyOps"`
	Linearizable string         `json:"linearizable"`
	// UnknownWrites are register writes whose outcome the client did not learn; UnknownWritesLeft,
	// those the store's history did not settle before the linearizability check (all of them
	// when the history could not be read: HistoryNote says why).
	UnknownWrites     int    `json:"unknownWrites"`
	UnknownWritesLeft int    `json:"unknownWritesLeft"`
	HistoryNote       string `json:"historyNote,omitempty"`
	// Preloaded is the number of keys written before the plan (--preload).
	Preloaded   int `json:"preloaded,omitempty"`
	WatchEvents int `json:"watchEvents"`
	// Auth is the auth check's finding, for plans run with auth on.
	Auth string `json:"auth,omitempty"`
	// Rehearsal is what a run from a copy of real data found (nil for other runs).
	Rehearsal *RehearsalReport `json:"rehearsal,omitempty"`
	// Problems are what the watch, revision and lease checks found.
	Problems      []string                    `json:"problems,omitempty"`
	Hashes        map[string]judge.MemberHash `json:"hashes,omitempty"`
	FinalVersions map[string]any              `json:"finalVersions,omitempty"`

	// WorkloadStart is when traffic began; Series holds it per second from then on.
	WorkloadStart time.Time        `json:"workloadStart"`
	Series        []workload.Point `json:"series,omitempty"`
	Timeline      Timeline         `json:"timeline"`
	// Trace is the run's OTLP JSON trace file; TraceSpans how many spans it holds and
	// TraceDropped how many did not fit.
	Trace        string `json:"trace,omitempty"`
	TraceSpans   int    `json:"traceSpans,omitempty"`
	TraceDropped int    `json:"traceDropped,omitempty"`
}

// StepReport is one step's outcome.
type StepReport struct {
	Step      string        `json:"step"`
	Kind      plan.StepKind `json:"kind"`
	StartedAt time.Time     `json:"startedAt"`
	Duration  time.Duration `json:"durationNs"`
	// Detail is what the step chose or did (the member a role named, the revision compacted).
	Detail       string                `json:"detail,omitempty"`
	Error        string                `json:"error,omitempty"`
	Availability workload.Availability `json:"availability"`
}

func (r *Runner) progress(format string, args ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format+"\n", args...)
	}
}

// thresholds are the plan's, or else the runner's, field by field.
func (r *Runner) thresholds(p *plan.Plan) plan.Thresholds {
	t := p.Thresholds
	if t.MaxStall == 0 {
		t.MaxStall = r.Thresholds.MaxStall
	}
	if t.MaxFailed == 0 {
		t.MaxFailed = r.Thresholds.MaxFailed
	}
	return t
}

func (r *Runner) tracer() trace.Tracer {
	if r.Tracing == nil {
		return noop.NewTracerProvider().Tracer("")
	}
	return r.Tracing.Tracer()
}

// Run executes p with members members. It always removes the cluster before returning, then
// writes the spans the run produced (the lab's and the members') to the run's trace file.
func (r *Runner) Run(ctx context.Context, p *plan.Plan, size int) Report {
	rep := r.runOnce(ctx, p, size)
	if r.Tracing == nil || rep.Dir == "" {
		return rep
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.Tracing.Flush(fctx); err != nil {
		r.Logger.Warn("flushing the lab's spans", "error", err)
	}
	spans, dropped := r.Tracing.Collector.Take()
	b, err := traces.MarshalJSON(spans)
	if err == nil {
		err = WriteFile(filepath.Join(rep.Dir, "trace.json"), b)
	}
	if err != nil {
		r.Logger.Warn("writing the run's trace", "error", err)
		return rep
	}
	rep.Trace, rep.TraceSpans, rep.TraceDropped = filepath.Join(rep.Dir, "trace.json"), traces.Count(spans), dropped
	return rep
}

func (r *Runner) runOnce(ctx context.Context, p *plan.Plan, size int) (rep Report) {
	began := time.Now()
	rep = Report{Plan: p.Name, Members: size, Seed: p.Seed, StartedAt: began, LostWrites: []string{},
		Binaries: map[string]cluster.Binary{}, Revision: r.Revision, Thresholds: r.thresholds(p)}
	ctx, span := r.tracer().Start(ctx, "run "+p.Name, trace.WithAttributes(
		attribute.String("plan", p.Name), attribute.Int("members", size), attribute.String("start", p.Start),
		attribute.Int64("seed", int64(p.Seed))))
	defer func() {
		rep.EndedAt = time.Now()
		rep.Duration = rep.EndedAt.Sub(began)
		span.SetAttributes(attribute.Bool("passed", rep.Passed))
		if !rep.Passed {
			span.SetStatus(codes.Error, rep.Failure)
		}
		span.End()
	}()
	fail := func(err error) Report {
		rep.Failure = err.Error()
		return rep // the deferred function still sets the duration on the named result
	}
	if err := r.Binaries.Need(p.Subjects()); err != nil {
		return fail(err)
	}
	for _, s := range p.Subjects() {
		rep.Binaries[s] = r.Binaries[s]
	}
	rep.Dir = filepath.Join(r.WorkDir, fmt.Sprintf("%s-%d-%s", p.Name, size, began.Format("150405.000")))
	partitions := false
	for _, s := range p.Steps {
		partitions = partitions || s.Kind() == plan.KindPartition
	}
	rt, notice, err := runtimes.New(ctx, r.Runtime, rep.Dir, partitions)
	if err != nil {
		return fail(err)
	}
	if notice != "" {
		r.progress("  note: %s", notice)
	}
	rep.Runtime = rt.Name()
	defer func() {
		if err := rt.Close(ctx); err != nil {
			r.Logger.Warn("removing the run's members", "error", err)
		}
	}()
	for _, s := range p.Steps {
		if err := rt.Supports(s.Kind()); err != nil {
			return fail(fmt.Errorf("plan %s cannot run here: %w", p.Name, err))
		}
	}
	c := &members{rt: rt, dir: rep.Dir, token: "upgradelab-" + p.Name}
	if r.Tracing != nil {
		collector, err := r.Tracing.Collector.Listen(rt.HostIP())
		if err != nil {
			return fail(err)
		}
		if !rt.HostIP().IsLoopback() {
			defer r.Tracing.Collector.Unlisten(rt.HostIP())
		}
		c.extra = func(name string) func(cluster.Binary) []string {
			return func(bin cluster.Binary) []string {
				return traces.MemberFlags(bin.Level, collector, name, r.Tracing.Ratio)
			}
		}
	}
	if err := c.create(ctx, size); err != nil {
		return fail(err)
	}
	sized := *p
	sized.Members = size
	r.progress("%s", strings.TrimRight(sized.Numbered(), "\n"))
	if r.Rehearsal != nil {
		t0 := time.Now()
		if err := c.restore(ctx, *r.Rehearsal); err != nil {
			return fail(err)
		}
		r.progress("  ok    0. restore %s into %d members (%.1fs)", r.Rehearsal.Snapshot, size, time.Since(t0).Seconds())
	}
	if err := r.startCluster(ctx, c, p.Start); err != nil {
		return fail(err)
	}
	var dialOpts []grpc.DialOption
	if r.Tracing != nil {
		dialOpts = append(dialOpts, grpc.WithStatsHandler(r.Tracing.ClientHandler()))
	}
	var la *labAuth
	user, password := "", ""
	if r.Rehearsal != nil {
		user, password = r.Rehearsal.User, r.Rehearsal.Password
	}
	if p.Auth && r.Rehearsal != nil {
		return fail(fmt.Errorf("plan %s sets up auth of its own; a rehearsal keeps the auth of its data (give its root user)", p.Name))
	}
	if p.Auth {
		t0 := time.Now()
		if la, err = enableAuth(ctx, c.endpoints()); err != nil {
			return fail(err)
		}
		user, password = "root", labRootPassword
		r.progress("  ok    0. auth on: root and %s (read and write %s) (%.1fs)", labUser, labUserPrefix, time.Since(t0).Seconds())
	}
	cli, err := newLabClient(c.endpoints(), user, password, dialOpts...)
	if err != nil {
		return fail(err)
	}
	defer cli.Close()
	var shape *DataShape
	if r.Rehearsal != nil {
		sctx, cancel := context.WithTimeout(ctx, r.StartTimeout)
		sh, err := shapeOf(sctx, cli)
		cancel()
		if err != nil {
			return fail(err)
		}
		shape = &sh
		rep.Rehearsal = &RehearsalReport{Snapshot: r.Rehearsal.Snapshot, Shape: sh}
		r.progress("  ok    0. the restored data: %s", sh)
		if user != "" {
			if la, err = recordAuth(ctx, c.endpoints(), user, password); err != nil {
				return fail(fmt.Errorf("read the restored auth state as %s: %w", user, err))
			}
		}
	}
	x := &run{Runner: r, c: c, cli: cli, rec: newRecorder()}
	x.rec.note(ctx, c.list)
	x.rec.poll(500 * time.Millisecond)
	defer func() { rep.Timeline = x.rec.done() }()
	if r.Preload > 0 {
		t0 := time.Now()
		n, err := workload.Preload(ctx, cli, "/upgradelab-preload/", r.Preload)
		if err != nil {
			return fail(err)
		}
		rep.Preloaded = n
		r.progress("  ok    0. preload %d keys (%d bytes) in %.1fs", n, r.Preload, time.Since(t0).Seconds())
	}
	wcfg := r.Workload
	if shape != nil && wcfg.ValueSize == 0 {
		wcfg.ValueSize = min(shape.ValueP50, 64<<10) // writes shaped like the data
	}
	if shape != nil && len(wcfg.KeySpread) == 0 {
		for _, p := range shape.Prefixes { // and spread over its prefixes as its keys are
			wcfg.KeySpread = append(wcfg.KeySpread, workload.WeightedPrefix{Prefix: p.Prefix, Weight: p.Keys})
		}
		rep.Rehearsal.WorkloadShape = fmt.Sprintf("values of %d bytes, ledger keys spread over %d prefixes of the data by their key counts", wcfg.ValueSize, len(wcfg.KeySpread))
	}
	w := workload.Start(cli, wcfg)
	rep.WorkloadStart = time.Now().Add(-time.Duration(w.Offset(time.Now())))
	sleep(ctx, r.Warmup)
	var stepErr error
	for i, s := range p.Steps {
		t0 := time.Now()
		stop := r.watch(w, i+1, s, t0)
		sctx, sspan := r.tracer().Start(ctx, string(s.Kind()), trace.WithAttributes(attribute.String("step", s.String()), attribute.Int("number", i+1)))
		detail, err := x.step(sctx, s)
		if err != nil {
			spanErr(sspan, err)
		}
		if detail != "" {
			sspan.SetAttributes(attribute.String("detail", detail))
		}
		sspan.End()
		stop()
		x.rec.note(ctx, c.list)
		t1 := time.Now()
		sr := StepReport{Step: s.String(), Kind: s.Kind(), StartedAt: t0, Duration: t1.Sub(t0), Detail: detail,
			Availability: workload.Window(w.Samples(), w.Offset(t0), w.Offset(t1))}
		if err != nil {
			sr.Error = err.Error()
			stepErr = fmt.Errorf("step %d (%s): %w", i+1, s, err)
		} else if err := stallExceeded(s, rep.Thresholds, sr.Availability); err != nil {
			sr.Error = err.Error()
			stepErr = fmt.Errorf("step %d (%s): %w", i+1, s, err)
		}
		rep.Steps = append(rep.Steps, sr)
		extra := ""
		if detail != "" {
			extra = " [" + detail + "]"
		}
		r.progress("  %-4s %2d. %s%s (%.1fs; %s)%s", okWord(stepErr), i+1, s, extra, sr.Duration.Seconds(), sr.Availability, errSuffix(err))
		if stepErr != nil {
			break
		}
	}
	if stepErr == nil {
		sleep(ctx, r.Settle)
	}
	w.Stop()
	defer w.Close()
	stats, errs := w.Stats()
	rep.Writes, rep.Reads, rep.FailedOps, rep.Errors, rep.AckedWrites = stats.Writes, stats.Reads, stats.Failed, errs, stats.Acked
	rep.Availability = workload.Window(w.Samples(), 0, w.Offset(time.Now()))
	rep.Series = workload.Series(w.Samples(), w.Offset(time.Now()), time.Second)
	checkErr := r.check(ctx, w, x, &rep)
	if checkErr == nil && shape != nil {
		checkErr = r.rehearsalIntact(ctx, cli, *shape, la, rep.Rehearsal)
	} else if checkErr == nil && la != nil {
		// Users, roles and permissions came through every step unchanged.
		if err := la.verify(ctx); err != nil {
			checkErr = fmt.Errorf("auth: %w", err)
		} else {
			rep.Auth = "users, roles and permissions intact; " + labUser + " allowed its prefix and refused elsewhere"
		}
	}
	if checkErr == nil && rep.Thresholds.MaxFailed > 0 && rep.FailedOps > rep.Thresholds.MaxFailed {
		checkErr = fmt.Errorf("%d requests failed, more than the %d allowed (max-failed)", rep.FailedOps, rep.Thresholds.MaxFailed)
	}
	rep.FinalVersions = finalVersions(ctx, c)
	switch {
	case stepErr != nil:
		rep.Failure = stepErr.Error()
	case checkErr != nil:
		rep.Failure = checkErr.Error()
	default:
		rep.Passed = true
	}
	return rep
}

// stallExceeded checks a step's longest write stall against its bound (the step's own, or
// the run's).
func stallExceeded(s plan.Step, t plan.Thresholds, a workload.Availability) error {
	bound := time.Duration(s.MaxStall)
	if bound == 0 {
		bound = time.Duration(t.MaxStall)
	}
	if bound > 0 && a.LongestStall > bound {
		return fmt.Errorf("writes stalled for %v (from %v into the run), more than the %v allowed (max-stall)",
			a.LongestStall.Round(time.Millisecond), a.StallFrom.Round(time.Millisecond), bound)
	}
	return nil
}

// watch prints a progress line every few seconds while a step runs; the returned function
// stops it.
func (r *Runner) watch(w *workload.Workload, n int, s plan.Step, t0 time.Time) func() {
	if r.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		const every = 3 * time.Second
		for {
			select {
			case <-done:
				return
			case <-time.After(every):
			}
			now := time.Now()
			a := workload.Window(w.Samples(), w.Offset(now.Add(-every)), w.Offset(now))
			r.progress("       %2d. %s: %.0fs, %.0f ok/s, %d errors in the last %v", n, s, now.Sub(t0).Seconds(), a.Throughput, a.Failed, every)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// newLabClient connects the workload's client; keepalives let it notice a member that a
// partition or a freeze cut off, and move on to another.
func newLabClient(endpoints []string, user, password string, opts ...grpc.DialOption) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 2 * time.Second, DialOptions: opts,
		Username: user, Password: password})
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

func okWord(err error) string {
	if err != nil {
		return "FAIL"
	}
	return "ok"
}

func errSuffix(err error) string {
	if err != nil {
		return ": " + err.Error()
	}
	return ""
}

func (r *Runner) startCluster(ctx context.Context, c *members, subject string) error {
	ctx, span := r.tracer().Start(ctx, "start cluster", trace.WithAttributes(attribute.String("subject", subject), attribute.Int("members", len(c.list))))
	defer span.End()
	for _, m := range c.list {
		if err := m.Start(ctx, r.Binaries[subject]); err != nil {
			return spanErr(span, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, r.StartTimeout)
	defer cancel()
	for _, m := range c.list {
		if err := m.WaitHealthy(wctx); err != nil {
			return spanErr(span, fmt.Errorf("member %s not healthy: %w; log tail:\n%s", m.Name(), err, tail(m.Log(ctx), 15)))
		}
	}
	r.progress("  ok    0. start %d members at %s", len(c.list), subject)
	return nil
}

func spanErr(span trace.Span, err error) error {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	return err
}

// check runs the end-of-run checks and fills rep.
func (r *Runner) check(ctx context.Context, w *workload.Workload, x *run, rep *Report) error {
	ctx, span := r.tracer().Start(ctx, "check")
	defer span.End()
	var f Findings
	vctx, vcancel := context.WithTimeout(ctx, 90*time.Second)
	v := w.Verify(vctx)
	vcancel()
	v.Problems = append(v.Problems, judge.Strings(x.rec.judgeVersions(x.downgrades))...)
	rep.WatchEvents, rep.Problems, f.Problems = v.WatchEvents, v.Problems, v.Problems
	span.SetAttributes(attribute.Int("watch-events", v.WatchEvents), attribute.Int("problems", len(v.Problems)))
	f.Hashes, f.HashErr = x.hashes(ctx)
	rep.Hashes = f.Hashes
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	lost, checked, err := w.LostWrites(rctx, 20)
	cancel()
	f.Lost, f.LostErr = lost, err
	if err == nil {
		rep.LostWrites = lost
		span.SetAttributes(attribute.Int("acked-writes-checked", checked), attribute.Int("lost-writes", len(lost)))
	}
	hctx, hcancel := context.WithTimeout(ctx, 30*time.Second)
	rep.UnknownWrites, rep.UnknownWritesLeft, err = w.NarrowUnknown(hctx)
	hcancel()
	if err != nil {
		rep.HistoryNote = err.Error() // the check runs on the writes as they are
	}
	span.SetAttributes(attribute.Int("unknown-writes", rep.UnknownWrites), attribute.Int("unknown-writes-left", rep.UnknownWritesLeft))
	f.Linearizable, f.HistoryOps = w.Linearizable(r.CheckTimeout)
	f.Timeout = r.CheckTimeout
	rep.Linearizable, rep.HistoryOps = string(f.Linearizable), f.HistoryOps
	span.SetAttributes(attribute.String("linearizable", string(f.Linearizable)), attribute.Int("history-ops", f.HistoryOps))
	err = Judge(f)
	if err != nil {
		spanErr(span, err)
	}
	return err
}

func finalVersions(ctx context.Context, c *members) map[string]any {
	out := map[string]any{}
	for _, m := range c.list {
		if !m.Running(ctx) {
			out[m.Name()] = "not running"
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		v, err := m.Versions(ctx)
		cancel()
		if err != nil {
			out[m.Name()] = err.Error()
			continue
		}
		out[m.Name()] = v
	}
	return out
}

// WriteFile writes data to path, creating its directory.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
