// Package lab runs a plan against a real cluster (processes or containers) under the
// workload, traces every step with OpenTelemetry, and judges the outcome: the plan's
// expectations, availability per step against thresholds, no lost acknowledged write, and a
// linearizable history.
//
// The files:
//
//	lab.go       Runner and Report: a run, its checks and its trace
//	steps.go     each step of a plan
//	members.go   the run's members, their hashes
//	crash.go     a member crashed at a failpoint
//	snapshot.go  the snapshot step
//	auth.go      a run with auth on
//	rehearse.go  a run started from a copy of a real cluster's data
//	timeline.go  the members' versions over the run, judged by pkg/judge
//	verdict.go   Judge: the findings of a run
//	campaign.go  Campaign: the runs of a matrix
package lab
