// Package compactor holds the leader's auto-compaction rule (--auto-compaction-mode and
// --auto-compaction-retention): how the retention flag reads, how often the rule is asked, and
// where it compacts. It is pure: the member's ticker asks it in the server (package etcdserver),
// the cluster's clock in the stepped simulation (server/sim/stepped).
package compactor
