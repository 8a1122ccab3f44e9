// Package conformance runs upstream etcd's own test suites (its e2e and robustness packages, at
// the release a level implements) as a black box against a directory of binaries, ours or
// upstream's, one process per test, and reports each test's result side by side.
//
// The files:
//
//	suite.go       building upstream's test binary of a package at a release (cached per machine)
//	layout.go      the bin dirs upstream's tests expect, of ours at a level and of upstream's
//	               release
//	failpoints.go  upstream's failpoint build of a release (its server module with gofail enabled)
//	run.go         running tests, one process each, in network and PID namespaces of their own so
//	               that several run at once
//	scenarios.go   the robustness suite's per-scenario results, with the failpoint each injected
//	report.go      results files, the explanations (why.txt) and the Markdown report
//	               (docs/conformance.md)
package conformance
