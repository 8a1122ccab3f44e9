// Package commands holds etcdctl's commands: the same names, flags, ETCDCTL_* variables and
// output as upstream etcdctl 3.6, on go.etcd.io/etcd/client/v3.
//
// The files:
//
//	global.go       the global flags and their environment, the client a command runs with
//	app.go          the command tree at a level, version and completion
//	kv.go           get, put, del, compaction
//	txn.go          txn, its interactive and piped input
//	watch.go        watch, with its interactive mode and exec
//	lease.go        lease
//	member.go       member
//	endpoint.go     endpoint health, status and hashkv
//	maintenance.go  alarm, defrag, move-leader, snapshot save
//	auth.go         auth, user and role
//	concurrency.go  lock and elect
//	mirror.go       make-mirror
//	check.go        check perf and check datascale
//	datascale.go    check datascale's loads, and the memory it reads from /metrics
//	downgrade.go    downgrade validate, enable and cancel
//	offline35.go    the offline commands etcdctl 3.5 still had, run on etcdutl's tree in-process
package commands
