// Package printer renders command results the way upstream etcdctl 3.6 does, in its output
// formats: simple, json, table, fields and protobuf. A result type opts into each format by
// implementing the matching method; asking for a format it lacks is upstream's
// "<format> not supported as output format" error.
//
// The files:
//
//	printer.go  Printer and the formats a result opts into
//	kv.go       get, put, del and txn results
//	lease.go    lease results
//	cluster.go  member, endpoint, alarm, downgrade and move-leader results
//	auth.go     auth, user and role results
//	watch.go    watch events and cancellations
package printer
