package lab

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/plan"
)

// Cell is one run of a campaign: a plan at a cluster size, on the runner's binaries or on a
// matrix subject set's.
type Cell struct {
	Plan    *plan.Plan
	Members int
	// Set names the matrix's subject set ("" outside a matrix); Binaries, when set, are that
	// set's (nil: the runner's).
	Set      string
	Binaries cluster.Binaries
	// Skip says why the cell cannot run ("" when it can).
	Skip string
}

// Campaign runs cells one after another with one runner, announcing each on Progress and
// handing each finished report to AfterRun (the per-run files), until the cells are done or
// the context ends.
type Campaign struct {
	Runner   *Runner
	Cells    []Cell
	Progress io.Writer
	AfterRun func(Report)
}

// Run runs the cells and returns their reports, in order (skipped cells included).
func (c *Campaign) Run(ctx context.Context) []Report {
	var levels []string
	for l, b := range c.Runner.Binaries {
		levels = append(levels, l+"="+b.Path)
	}
	sort.Strings(levels)
	fmt.Fprintf(c.Progress, "binaries: %s\nworkdir: %s\n", strings.Join(levels, " "), c.Runner.WorkDir)
	var reports []Report
	for _, cell := range c.Cells {
		if cell.Skip != "" {
			rep := Report{Plan: cell.Plan.Name, Members: cell.Members, Seed: cell.Plan.Seed, Skipped: cell.Skip, StartedAt: time.Now(), LostWrites: []string{}, Subjects: cell.Set}
			rep.EndedAt = rep.StartedAt
			reports = append(reports, rep)
			fmt.Fprintf(c.Progress, "SKIP %s/%d%s: %s\n", cell.Plan.Name, cell.Members, inSet(cell.Set), cell.Skip)
			continue
		}
		fmt.Fprintf(c.Progress, "=== %s, %d members, from %s%s\n", cell.Plan.Name, cell.Members, cell.Plan.Start, inSet(cell.Set))
		rr := *c.Runner
		if cell.Binaries != nil {
			rr.Binaries, rr.WorkDir = cell.Binaries, filepath.Join(c.Runner.WorkDir, cell.Set)
		}
		rep := rr.Run(ctx, cell.Plan, cell.Members)
		rep.Subjects = cell.Set
		reports = append(reports, rep)
		c.announce(rep)
		if rep.Dir != "" && c.AfterRun != nil {
			c.AfterRun(rep)
		}
		if !rep.Passed {
			fmt.Fprintf(c.Progress, "     %s\n     logs: %s\n", rep.Failure, rep.Dir)
			if rep.Seed != 0 {
				fmt.Fprintf(c.Progress, "     seed %d: replay with upgradelab plan --seed %d and the same --from, --via, --to, --faults and --members\n", rep.Seed, rep.Seed)
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	return reports
}

// announce prints a finished run's verdict line and its availability.
func (c *Campaign) announce(rep Report) {
	verdict := "PASS"
	if !rep.Passed {
		verdict = "FAIL"
	}
	fmt.Fprintf(c.Progress, "%s %s/%d%s in %.1fs (%s): %d writes, %d reads, %d failed requests; %d of %d acknowledged writes lost; %d register operations: %s\n     availability: %s\n",
		verdict, rep.Plan, rep.Members, inSet(rep.Subjects), rep.Duration.Seconds(), rep.Runtime, rep.Writes, rep.Reads, rep.FailedOps,
		len(rep.LostWrites), rep.AckedWrites, rep.HistoryOps, rep.Linearizable, rep.Availability)
}

// inSet names a matrix's subject set in progress lines.
func inSet(set string) string {
	if set == "" {
		return ""
	}
	return " (" + set + ")"
}
