package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"etcdx/e2e/conformance"
	"etcdx/upgradelab/cluster"
)

// conformanceSample is the fixed handful of upstream's e2e tests make test runs per level: an
// etcdctl command, a put through a dial timeout, a gateway txn or a delete, upstream's own
// metrics check, and the v2 API at 3.5 (its curl and etcdctl v2 tests) and its refusal at 3.6,
// picked from tests that exist at the level and run in seconds; at 3.5 also the health checks
// with the raft loop held by a failpoint (about 25 s), which a change of ours once broke.
var conformanceSample = map[string][]string{
	"3.7": {"TestCtlV3Version", "TestCtlV3PutTimeout", "TestCurlV3KVTxn", "TestNoMetricsMissing", "TestGracefulShutdown",
		"TestResumeCompactionOnTombstone", "TestLeaseRevokeDuringRenew", "TestReproduce17780", "TestCompactHashCheckDetectCorruptionInterrupt"},
	"3.6": {"TestCtlV3Version", "TestCtlV3PutTimeout", "TestCurlV3KVTxn", "TestNoMetricsMissing", "TestV2DeprecationWriteOnlySnapshot"},
	"3.5": {"TestCtlV3Version", "TestCtlV3PutTimeout", "TestCtlV3Del", "TestCtlV3TxnInteractiveSuccess", "TestV2CurlIssue5182", "TestCtlV2Watch",
		"TestHTTPHealthHandler"},
}

// TestUpstreamSuitesSample runs conformanceSample through the harness of make conformance
// (upstream's test binary built at the level's release, our binaries laid out as it expects,
// one process per test) and requires each to pass on ours, so the harness cannot rot between
// full runs (docs/conformance.md has those).
func TestUpstreamSuitesSample(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	bin := filepath.Dir(Binary(t, "etcd"))
	parallel, isolated := 1, conformance.Isolated()
	if isolated {
		parallel = 2
	}
	for _, level := range []string{CurrentLevel, LastReleaseLevel, OldestLevel} {
		t.Run(level, func(t *testing.T) {
			if isolated {
				t.Parallel() // each test in a namespace of its own: the levels' ports cannot meet
			}
			s, err := conformance.BuildSuite(conformance.UpstreamVersion(level), "e2e")
			if errors.Is(err, cluster.ErrProxyUnreachable) {
				cannotRun(t, "%v", err) // the tests' source comes from the module proxy
			}
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if _, err := conformance.LayOutOurs(filepath.Join(dir, "bin"), bin, level); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			res, err := conformance.Run(ctx, s, conformanceSample[level], []conformance.Side{{Name: "ours", BinDir: filepath.Join(dir, "bin")}},
				conformance.Options{Timeout: 3 * time.Minute, Parallel: parallel, LogDir: filepath.Join(dir, "logs")})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res["ours"] {
				if r.Status != "pass" {
					t.Errorf("upstream %s's %s: %s on ours after %.1fs: %s (failed: %v)", s.Version, r.Test, r.Status, r.Seconds, r.Reason, r.Failed)
				}
			}
		})
	}
}

// robustnessSample is the part of upstream's robustness suite make test runs (at the current
// level, on bin/failpoints): a member that panics before its WAL write and restarts (gofail), and
// a follower blackholed until the leader must send it a snapshot (upstream's peer proxy).
var robustnessSample = []string{"TestRobustnessRegression/Issue14370", "TestRobustnessRegression/Issue15271"}

// TestUpstreamRobustnessSample runs robustnessSample through make robustness's harness and
// requires each scenario to inject its failpoint and pass upstream's linearizability and watch
// checks on ours.
func TestUpstreamRobustnessSample(t *testing.T) {
	t.Parallel()
	bin := filepath.Dir(Binary(t, "etcd"))
	s, err := conformance.BuildSuite(conformance.UpstreamVersion(CurrentLevel), "robustness")
	if errors.Is(err, cluster.ErrProxyUnreachable) {
		cannotRun(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := conformance.LayOutOurs(filepath.Join(dir, "bin"), bin, CurrentLevel); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// One at a time: upstream's traffic needs its minimal rate on 2 CPUs. In a namespace where
	// there are: the scenarios' ports are upstream's fixed ones.
	res, err := conformance.Run(ctx, s, robustnessSample, []conformance.Side{{Name: "ours", BinDir: filepath.Join(dir, "bin")}},
		conformance.Options{Timeout: 4 * time.Minute, Parallel: 1, Isolate: conformance.Isolated(), Scenarios: true,
			LogDir: filepath.Join(dir, "logs"), Env: []string{"RESULTS_DIR=" + filepath.Join(dir, "reports")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res["ours"]) != len(robustnessSample) {
		t.Fatalf("%d results for %d scenarios: %+v", len(res["ours"]), len(robustnessSample), res["ours"])
	}
	for _, r := range res["ours"] {
		if r.Status != "pass" || r.Failpoint == "" {
			t.Errorf("upstream %s's %s: %s on ours after %.1fs, failpoint %q: %s (failed: %v)", s.Version, r.Test, r.Status, r.Seconds, r.Failpoint, r.Reason, r.Failed)
		}
	}
}
