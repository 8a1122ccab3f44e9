// Package tool is etcdutl's command tree: it works on a stopped member's data and on snapshot
// files, offline, and never changes its input unless the command exists to do so (restore
// writes a new data dir). The tree is upstream's, built with the same library (cobra on
// pflag): global flags before or after the command, commands shortened to a prefix, help and
// completion. etcdctl at level 3.5 runs it for the offline commands etcdctl 3.5 still had.
//
// The files:
//
//	tool.go      Run: the root, global flags, version and completion
//	commands.go  backup, check (and check v2store), defrag, hashkv, migrate
//	snapshot.go  snapshot status, restore (and save at 3.5)
package tool
