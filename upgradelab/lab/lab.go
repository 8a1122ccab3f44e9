// Package lab runs a plan against a real cluster under the workload, traces every step with
// OpenTelemetry, and checks the outcome: the plan's expectations, no lost acknowledged write,
// and a linearizable history.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/plan"
	"etcdx/upgradelab/workload"
)

// Runner holds what every run shares.
type Runner struct {
	Binaries cluster.Binaries
	// WorkDir gets one directory per run (members' data and logs).
	WorkDir  string
	Workload workload.Config
	Tracer   trace.Tracer
	Logger   *slog.Logger
	// Progress receives one line per step as it ends (may be nil).
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
}

// Report is the outcome of one run.
type Report struct {
	Plan     string        `json:"plan"`
	Members  int           `json:"members"`
	Dir      string        `json:"dir"`
	Passed   bool          `json:"passed"`
	Failure  string        `json:"failure,omitempty"`
	Duration time.Duration `json:"durationNs"`
	Steps    []StepReport  `json:"steps"`

	Writes        int            `json:"writes"`
	Reads         int            `json:"reads"`
	FailedOps     int            `json:"failedOps"`
	Errors        map[string]int `json:"errors,omitempty"`
	AckedWrites   int            `json:"ackedWrites"`
	LostWrites    []string       `json:"lostWrites"`
	HistoryOps    int            `json:"historyOps"`
	Linearizable  string         `json:"linearizable"`
	FinalVersions map[string]any `json:"finalVersions,omitempty"`
}

// StepReport is one step's outcome.
type StepReport struct {
	Step     string        `json:"step"`
	Duration time.Duration `json:"durationNs"`
	Error    string        `json:"error,omitempty"`
}

func (r *Runner) progress(format string, args ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format+"\n", args...)
	}
}

// Run executes p with members members. It always stops the cluster before returning.
func (r *Runner) Run(ctx context.Context, p *plan.Plan, members int) (rep Report) {
	began := time.Now()
	rep = Report{Plan: p.Name, Members: members, LostWrites: []string{}}
	ctx, span := r.Tracer.Start(ctx, "run "+p.Name, trace.WithAttributes(
		attribute.String("plan", p.Name), attribute.Int("members", members), attribute.String("start", p.Start)))
	defer func() {
		rep.Duration = time.Since(began)
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
	rep.Dir = filepath.Join(r.WorkDir, fmt.Sprintf("%s-%d-%s", p.Name, members, time.Now().Format("150405.000")))
	c, err := cluster.New(rep.Dir, members, "upgradelab-"+p.Name)
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := c.StopAll(); err != nil {
			r.Logger.Warn("stopping the cluster", "error", err)
		}
	}()
	if err := r.startCluster(ctx, c, p.Start); err != nil {
		return fail(err)
	}
	cli, err := c.Client()
	if err != nil {
		return fail(err)
	}
	defer cli.Close()
	w := workload.Start(cli, r.Workload)
	sleep(ctx, r.Warmup)
	var stepErr error
	for i, s := range p.Steps {
		t0 := time.Now()
		err := r.step(ctx, c, cli, s)
		sr := StepReport{Step: s.String(), Duration: time.Since(t0)}
		if err != nil {
			sr.Error = err.Error()
			stepErr = fmt.Errorf("step %d (%s): %w", i+1, s, err)
		}
		rep.Steps = append(rep.Steps, sr)
		r.progress("  %-4s %s (%.1fs)%s", okWord(err), s, sr.Duration.Seconds(), errSuffix(err))
		if err != nil {
			break
		}
	}
	if stepErr == nil {
		sleep(ctx, r.Settle)
	}
	w.Stop()
	stats, errs := w.Stats()
	rep.Writes, rep.Reads, rep.FailedOps, rep.Errors, rep.AckedWrites = stats.Writes, stats.Reads, stats.Failed, errs, stats.Acked
	checkErr := r.check(ctx, w, &rep)
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

func (r *Runner) startCluster(ctx context.Context, c *cluster.Cluster, level string) error {
	ctx, span := r.Tracer.Start(ctx, "start cluster", trace.WithAttributes(attribute.String("level", level), attribute.Int("members", len(c.Members))))
	defer span.End()
	for _, m := range c.Members {
		if err := m.StartAs(r.Binaries[level], level); err != nil {
			return spanErr(span, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, r.StartTimeout)
	defer cancel()
	for _, m := range c.Members {
		if err := m.WaitHealthy(wctx); err != nil {
			return spanErr(span, fmt.Errorf("member %s not healthy: %w; log tail:\n%s", m.Name, err, m.LogTail(15)))
		}
	}
	r.progress("  ok   start %d members at %s", len(c.Members), level)
	return nil
}

func spanErr(span trace.Span, err error) error {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	return err
}

func (r *Runner) step(ctx context.Context, c *cluster.Cluster, cli *clientv3.Client, s plan.Step) error {
	ctx, span := r.Tracer.Start(ctx, string(s.Kind()), trace.WithAttributes(attribute.String("step", s.String())))
	defer span.End()
	var err error
	switch s.Kind() {
	case plan.KindReplace:
		err = r.replace(ctx, c, s.Replace)
	case plan.KindDowngrade:
		err = downgrade(ctx, cli, s.Downgrade)
	case plan.KindExpect:
		err = r.expect(ctx, c, s.Expect)
	case plan.KindKill:
		c.Member(s.Kill).Kill()
	case plan.KindRestart:
		m := c.Member(s.Restart)
		if err = m.StartAs(m.Bin, m.Level); err == nil {
			err = r.waitHealthy(ctx, m)
		}
	case plan.KindPause:
		sleep(ctx, time.Duration(s.Pause))
		err = ctx.Err()
	}
	if err != nil {
		return spanErr(span, err)
	}
	return nil
}

func (r *Runner) waitHealthy(ctx context.Context, m *cluster.Member) error {
	ctx, cancel := context.WithTimeout(ctx, r.StartTimeout)
	defer cancel()
	if err := m.WaitHealthy(ctx); err != nil {
		return fmt.Errorf("member %s not healthy: %w; log tail:\n%s", m.Name, err, m.LogTail(15))
	}
	return nil
}

// replace swaps binaries one member at a time, as an operator would.
func (r *Runner) replace(ctx context.Context, c *cluster.Cluster, rp *plan.Replace) error {
	names := rp.Members
	if len(names) == 0 {
		for _, m := range c.Members {
			names = append(names, m.Name)
		}
	}
	for _, name := range names {
		m := c.Member(name)
		_, span := r.Tracer.Start(ctx, "replace member", trace.WithAttributes(
			attribute.String("member", name), attribute.String("from", m.Level), attribute.String("to", rp.Version)))
		err := m.Stop(30 * time.Second)
		if err == nil {
			err = m.StartAs(r.Binaries[rp.Version], rp.Version)
		}
		if err == nil {
			err = r.waitHealthy(ctx, m)
		}
		if err != nil {
			spanErr(span, err)
			span.End()
			return fmt.Errorf("member %s: %w", name, err)
		}
		span.End()
	}
	return nil
}

func downgrade(ctx context.Context, cli *clientv3.Client, d *plan.Downgrade) error {
	action := map[string]clientv3.DowngradeAction{"validate": clientv3.DowngradeValidate,
		"enable": clientv3.DowngradeEnable, "cancel": clientv3.DowngradeCancel}[d.Action]
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := cli.Downgrade(ctx, action, d.Version)
	switch {
	case d.Error == "" && err != nil:
		return fmt.Errorf("downgrade %s %s: %w", d.Action, d.Version, err)
	case d.Error != "" && err == nil:
		return fmt.Errorf("downgrade %s %s succeeded, want an error with %q", d.Action, d.Version, d.Error)
	case d.Error != "" && !strings.Contains(err.Error(), d.Error):
		return fmt.Errorf("downgrade %s %s failed with %q, want %q", d.Action, d.Version, err, d.Error)
	}
	return nil
}

// majorMinor cuts "3.6.0" to "3.6"; an empty storage version means 3.5.
func majorMinor(v string, emptyMeans string) string {
	if v == "" {
		return emptyMeans
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// expect polls every running member until all conditions hold or the timeout passes.
func (r *Runner) expect(ctx context.Context, c *cluster.Cluster, e *plan.Expect) error {
	timeout := time.Duration(e.Timeout)
	if timeout <= 0 {
		timeout = r.ExpectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		last = unmet(ctx, c, e)
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %v: %s", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// unmet describes the first condition that does not hold, or returns "".
func unmet(ctx context.Context, c *cluster.Cluster, e *plan.Expect) string {
	if e.Log != "" {
		found := false
		for _, m := range c.Members {
			found = found || strings.Contains(m.Log(), e.Log)
		}
		if !found {
			return fmt.Sprintf("no member logged %q", e.Log)
		}
	}
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		v, err := m.Versions(ctx)
		if err != nil {
			return fmt.Sprintf("member %s: %v", m.Name, err)
		}
		for _, chk := range []struct{ what, want, got string }{
			{"cluster version", e.Cluster, majorMinor(v.Cluster, "")},
			{"storage version", e.Storage, majorMinor(v.Storage, "3.5")},
			{"server version", e.Server, majorMinor(v.Server, "")},
		} {
			if chk.want != "" && chk.got != chk.want {
				return fmt.Sprintf("member %s: %s is %s, want %s", m.Name, chk.what, chk.got, chk.want)
			}
		}
	}
	return ""
}

// check runs the end-of-run checks and fills rep.
func (r *Runner) check(ctx context.Context, w *workload.Workload, rep *Report) error {
	ctx, span := r.Tracer.Start(ctx, "check")
	defer span.End()
	var errs []error
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	lost, checked, err := w.LostWrites(rctx, 20)
	cancel()
	if err != nil {
		errs = append(errs, err)
	} else {
		rep.LostWrites = lost
		span.SetAttributes(attribute.Int("acked-writes-checked", checked), attribute.Int("lost-writes", len(lost)))
		if len(lost) > 0 {
			errs = append(errs, fmt.Errorf("%d acknowledged writes lost, e.g. %s", len(lost), strings.Join(lost, ", ")))
		}
	}
	verdict, n := w.Linearizable(r.CheckTimeout)
	rep.Linearizable, rep.HistoryOps = string(verdict), n
	span.SetAttributes(attribute.String("linearizable", string(verdict)), attribute.Int("history-ops", n))
	switch verdict {
	case porcupine.Illegal:
		errs = append(errs, fmt.Errorf("the history of %d register operations is not linearizable", n))
	case porcupine.Unknown:
		errs = append(errs, fmt.Errorf("the linearizability check of %d operations did not finish within %v", n, r.CheckTimeout))
	}
	err = errors.Join(errs...)
	if err != nil {
		spanErr(span, err)
	}
	return err
}

func finalVersions(ctx context.Context, c *cluster.Cluster) map[string]any {
	out := map[string]any{}
	for _, m := range c.Members {
		if !m.Running() {
			out[m.Name] = "not running"
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		v, err := m.Versions(ctx)
		cancel()
		if err != nil {
			out[m.Name] = err.Error()
			continue
		}
		out[m.Name] = v
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
