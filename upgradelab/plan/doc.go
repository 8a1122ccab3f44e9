// Package plan reads upgrade and downgrade plans: the cluster a run starts with and the steps
// it goes through (replace binaries, drive a downgrade, kill or restart members, expect
// versions, inject faults). Plans are YAML; the built-in ones live in plans/.
//
// The files:
//
//	plan.go      Plan and its steps
//	step.go      the kinds of step
//	validate.go  a plan checked
//	generate.go  plans generated from a seed
//	route.go     a plan from an assessed path
package plan
