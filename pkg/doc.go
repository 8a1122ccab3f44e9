// Package pkg holds small leaf packages that several binaries share and that depend on nothing
// of ours: buildinfo (what a binary was built as), table (the bordered tables upstream's CLIs
// print), rangestream (etcd 3.7's RangeStream RPC types), register (the linearizability model
// the simulation and the upgrade lab judge their client histories with) and judge (the checks
// both judge a run by). Keeping them out of the server module lets etcdctl and etcdutl print
// versions and tables without pulling in the server.
package pkg
