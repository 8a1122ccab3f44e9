// Package judge holds the checks a run of a cluster is judged by, the same for the simulation
// (server/sim), the upgrade lab (upgradelab/workload, upgradelab/lab) and e2e: pure functions
// over what a harness recorded, so each is proven on a history with a planted fault. A finding
// names the check that made it (Check), so a planted fault's test asserts which check fires,
// not only that something failed.
//
// The files:
//
//	judge.go    Finding and Check; lost and twice-applied writes, revisions going back,
//	            members' hashes disagreeing
//	watch.go    watches that skip, repeat, reorder or invent changes
//	versions.go cluster and storage versions: each member's over a run, the members' against
//	            each other, and once settled
//	leases.go   leases that expire early or never
//	observed.go the names of what a harness sees while it drives a cluster (a refused start, a
//	            learner that cannot be promoted, a membership drift, a history that is not
//	            linearizable)
package judge
