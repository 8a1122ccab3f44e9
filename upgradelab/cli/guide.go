package cli

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"etcdx/upgradelab/assess"
	"etcdx/upgradelab/guide"
	"etcdx/upgradelab/releases"
)

func guideCmd(args []string, stdout, stderr io.Writer) int {
	var c connFlags
	var to string
	var stepTimeout time.Duration
	var maxLag uint64
	var settle time.Duration
	var mode string
	fs := pflag.NewFlagSet("upgradelab guide", pflag.ContinueOnError)
	c.add(fs)
	fs.StringVar(&to, "to", "", "The version to go to: a release line (3.7: its newest patch) or a patch (3.7.3).")
	fs.DurationVar(&stepTimeout, "step-timeout", 10*time.Minute, "How long one member's step may take before its gate counts as failed.")
	fs.Uint64Var(&maxLag, "max-lag", 1000, "How many applied entries a member may trail the leader and count as caught up.")
	fs.DurationVar(&settle, "settle", 2*time.Second, "How long a member must stay back (version, health, within --max-lag, no alarm) before its step counts as done.")
	fs.StringVar(&mode, "mode", "in-place", "How members move up: in-place (swap each member's binary) or replacement (add a learner at the new version, promote it, remove the old member).")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "upgradelab guide: "+format+"\n", args...)
		return code
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	if mode != "in-place" && mode != "replacement" {
		return fail(2, "--mode %q: want in-place or replacement", mode)
	}
	if len(c.endpoints) == 0 {
		return fail(2, "--endpoints is required: the guide watches the live cluster")
	}
	k, err := releases.Load()
	if err != nil {
		return fail(2, "%v", err)
	}
	target, err := resolveTarget(k, to)
	if err != nil {
		return fail(2, "--to: %v", err)
	}
	ep, err := c.resolve()
	if err != nil {
		return fail(2, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// The guide walks the path assess plans, and only where assess finds nothing in the way
	// that the path itself does not take care of.
	cctx, cancel := context.WithTimeout(ctx, 10*c.timeout)
	facts, err := assess.CollectLive(cctx, ep)
	cancel()
	if err != nil {
		return fail(2, "%v", err)
	}
	report := assess.Evaluate(k, facts, target)
	if blocks := report.Unhandled(); len(blocks) > 0 {
		_ = assess.WriteText(stdout, facts, report)
		return fail(1, "%d finding(s) block this path and the path does not take care of them (see above): fix them, then run the guide again", len(blocks))
	}
	if len(report.Path) == 0 {
		fmt.Fprintf(stdout, "Nothing to do: every member runs %s.\n", target)
		return 0
	}
	fmt.Fprintf(stdout, "Guiding %d member(s) from %v to %s in %d hop(s). Each step says what to do; the guide waits until the cluster shows it done.\n",
		len(facts.Members), report.Versions, target, len(report.Path))
	for _, f := range report.Findings {
		if f.Verdict == assess.Warn {
			fmt.Fprintf(stdout, "  note: %s (%s): %s\n", f.Check, f.Subject, f.Summary)
		}
	}
	err = guide.Run(ctx, guide.Config{Endpoints: ep, Hops: report.Path, Knowledge: k, StepTimeout: stepTimeout, MaxLag: maxLag, Settle: settle,
		Replacement: mode == "replacement", Out: stdout})
	if err != nil {
		return fail(1, "%v", err)
	}
	return 0
}
