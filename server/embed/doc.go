// Package embed starts an etcd member inside a Go program: the etcd binary, tests and the
// discovery service all use it. Fill a Config (NewConfig gives upstream's defaults) and call
// StartEtcd.
//
// The files:
//
//	embed.go     Config, StartEtcd: the member, its listeners and servers, graceful stop
//	serving.go   the serving, TLS-hardening and authentication flags checked
//	startlog.go  upstream's "starting an etcd server" event at this binary's level
//	discovery.go the v3 discovery configuration
package embed
