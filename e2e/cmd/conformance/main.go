// Command conformance runs upstream etcd's own test suites (its e2e tests, or its robustness
// scenarios), at the release a level implements, against our binaries and against upstream's
// release on the same machine in the same run, and writes the results (docs/conformance/*.json)
// and the report (docs/conformance.md). `make conformance LEVEL=3.7` and `make robustness` run it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"etcdx/e2e/conformance"
)

func main() {
	level := flag.String("level", "3.7", "the level whose upstream release's tests run: 3.7, 3.6 or 3.5")
	suite := flag.String("suite", "e2e", "the package of upstream's tests module to run")
	bin := flag.String("bin", "bin", "our binaries, as make build and make build-failpoints lay them out")
	run := flag.String("run", "", "only the tests this regular expression matches (default: every test)")
	sidesFlag := flag.String("sides", "ours,upstream", "the sides to run: ours, upstream or both")
	parallel := flag.Int("parallel", 2, "tests at once, each in a network namespace of its own (1: one at a time, without namespaces)")
	timeout := flag.Duration("timeout", 5*time.Minute, "the time one test may take")
	records := flag.String("records", "docs/conformance", "where each level's results are kept")
	doc := flag.String("doc", "docs/conformance.md", "the report, made from every level's results (empty: none)")
	work := flag.String("work", ".run/conformance", "bin dirs and each test's output")
	releaseBuilds := flag.Bool("upstream-release-builds", false, "run upstream's side on its release builds (default: its etcd built with failpoints, as upstream's CI runs its tests)")
	count := flag.Int("count", 3, "robustness: runs of the exploratory scenarios (each draws its failpoints afresh)")
	docOnly := flag.Bool("doc-only", false, "run nothing: write the report again from the records and their why.txt (after an explanation is added)")
	rerun := flag.Bool("rerun-differences", false, "run again on ours only the tests the level's record shows ending differently, and record their new results (noted in the report)")
	flag.Parse()
	if *rerun {
		*sidesFlag = "ours"
		if *suite == "robustness" {
			fmt.Fprintln(os.Stderr, "conformance: --rerun-differences reruns e2e tests; robustness scenarios draw their failpoints afresh, run them again with --run")
			os.Exit(2)
		}
	}
	if *docOnly {
		if err := writeDoc(*records, *doc); err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			os.Exit(1)
		}
		return
	}
	c := config{level: *level, suite: *suite, bin: *bin, run: *run, sides: *sidesFlag, parallel: *parallel, count: *count,
		timeout: *timeout, records: *records, doc: *doc, work: *work, rerun: *rerun, releaseBuilds: *releaseBuilds}
	if err := c.main(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	level, suite, bin, run, sides string
	parallel, count               int
	timeout                       time.Duration
	records, doc, work            string
	rerun, releaseBuilds          bool
}

func (c config) main() error {
	level, suiteName, bin, run, sidesFlag := c.level, c.suite, c.bin, c.run, c.sides
	parallel, count, timeout, records, doc, work, rerun, releaseBuilds := c.parallel, c.count, c.timeout, c.records, c.doc, c.work, c.rerun, c.releaseBuilds
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	version := conformance.UpstreamVersion(level)
	fmt.Printf("building upstream's %s tests at %s\n", suiteName, version)
	s, err := conformance.BuildSuite(version, suiteName)
	if err != nil {
		return err
	}
	tests, err := s.List()
	if err != nil {
		return err
	}
	if strings.Contains(run, "/") {
		tests = []string{run} // one subtest: upstream's binary matches it level by level
	} else if run != "" {
		re, err := regexp.Compile(run)
		if err != nil {
			return fmt.Errorf("--run: %w", err)
		}
		var keep []string
		for _, t := range tests {
			if re.MatchString(t) {
				keep = append(keep, t)
			}
		}
		tests = keep
	}
	scenarios := suiteName == "robustness"
	if scenarios {
		tests = robustnessRuns(tests, count)
	}
	now := time.Now().UTC().Format("2006-01-02 15:04 UTC")
	command := "conformance " + strings.Join(os.Args[1:], " ")
	rec := &conformance.Record{Level: level, Upstream: version, Suite: suiteName, Date: now, Command: command,
		Machine: fmt.Sprintf("%d CPUs, %d tests at once, %v per test", runtime.NumCPU(), parallel, timeout)}
	if scenarios {
		rec.Machine = fmt.Sprintf("%d CPUs, %d test processes at once, %v per process", runtime.NumCPU(), parallel, timeout)
	}
	var previous *conformance.Record
	if rerun {
		if previous, err = conformance.LoadRecord(conformance.RecordPath(records, suiteName, level)); err != nil {
			return err
		}
		tests = previous.Differences()
	}
	var sides []conformance.Side
	for _, name := range strings.Split(sidesFlag, ",") {
		dir := filepath.Join(work, "bin-"+level, name)
		var notes []string
		switch name {
		case "ours":
			notes, err = conformance.LayOutOurs(dir, bin, level)
		case "upstream":
			notes, err = conformance.LayOutUpstream(dir, level, !releaseBuilds)
		default:
			err = fmt.Errorf("--sides: no side %q", name)
		}
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		rec.Notes = append(rec.Notes, notes...)
		sides = append(sides, conformance.Side{Name: name, BinDir: abs})
	}
	logs, err := filepath.Abs(filepath.Join(work, "logs-"+level))
	if err != nil {
		return err
	}
	fmt.Printf("running %d tests on %d sides, %d at once; output in %s\n", len(tests), len(sides), parallel, logs)
	start := time.Now()
	done := 0
	// A namespace for each test where there are, even one at a time: upstream's tests use fixed
	// ports, which something else on the machine may hold.
	opts := conformance.Options{Timeout: timeout, Parallel: parallel, Isolate: conformance.Isolated(), LogDir: logs, Scenarios: scenarios}
	if scenarios {
		// upstream's robustness tests keep each failing scenario's data and report there
		reports := filepath.Join(logs, "reports")
		if err := os.MkdirAll(reports, 0o755); err != nil {
			return err
		}
		opts.Env = append(opts.Env, "RESULTS_DIR="+reports)
	}
	opts.Progress = func(side string, r conformance.Result) {
		done++
		fmt.Printf("[%d %v] %-8s %-7s %6.1fs %s %s %s\n", done, time.Since(start).Round(time.Second), side, r.Status, r.Seconds, r.Test, r.Failpoint, r.Reason)
	}
	rec.Results, err = conformance.Run(ctx, s, tests, sides, opts)
	if err != nil {
		return err
	}
	if rerun {
		previous.Replace("ours", rec.Results["ours"], fmt.Sprintf("%d tests that ended differently were run again on ours on %s with `%s` (%s): %s",
			len(tests), now, command, strings.Join(rec.Notes, "; "), strings.Join(tests, ", ")))
		rec = previous
	} else if run != "" || len(sides) < 2 {
		fmt.Println("a partial run (--run or one side): results not recorded")
		printDifferences(rec)
		return nil
	}
	if err := rec.Save(conformance.RecordPath(records, suiteName, level)); err != nil {
		return err
	}
	printDifferences(rec)
	if doc == "" {
		return nil
	}
	return writeDoc(records, doc)
}

func printDifferences(rec *conformance.Record) {
	if len(rec.Results) < 2 {
		return
	}
	d := rec.Differences()
	fmt.Printf("%d tests end differently on ours and upstream: %s\n", len(d), strings.Join(d, " "))
}

// writeDoc makes the report from every recorded level and the explanations beside them.
func writeDoc(records, doc string) error {
	recs, err := conformance.LoadRecords(records)
	if err != nil {
		return err
	}
	why, err := conformance.LoadWhy(filepath.Join(records, "why.txt"))
	if err != nil {
		return err
	}
	pre, err := os.ReadFile(filepath.Join(records, "preamble.md"))
	if err != nil {
		return err
	}
	return os.WriteFile(doc, []byte(conformance.Markdown(recs, why, string(pre))), 0o644)
}

// robustnessRuns is the processes of upstream's robustness suite: its exploratory test count
// times (each run draws every scenario's failpoint afresh), every other test (the regression
// scenarios) once.
func robustnessRuns(tests []string, count int) []string {
	var runs []string
	for _, t := range tests {
		n := 1
		if t == "TestRobustnessExploratory" {
			n = count
		}
		for range n {
			runs = append(runs, t)
		}
	}
	return runs
}
