// Package assess answers an operator's question about one real cluster: is it safe to take to
// this version, and if not, what is in the way and what fixes it. It gathers facts, read-only,
// from the live members, from stopped members' data dirs and from their flags or config files
// (live.go, datadir.go, flags.go), and judges them against the release knowledge (rules.go,
// pure, table-tested). The hops that get the cluster there come from releases.Path.
//
// The files:
//
//	facts.go    the facts gathered about a cluster
//	live.go     facts from the live members
//	datadir.go  facts from stopped members' data dirs
//	flags.go    facts from members' flags, environment files, manifests and config files
//	rules.go    Evaluate: the findings and verdict (pure, table-tested)
//	render.go   the report as text
package assess
