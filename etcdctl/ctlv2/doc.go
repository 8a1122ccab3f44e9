// Package ctlv2 is etcdctl's v2 mode at level 3.5 (ETCDCTL_API=2): upstream 3.5's v2 commands,
// global flags, ETCDCTL_* variables, outputs and exit statuses, over the v2 client library
// (go.etcd.io/etcd/client/v2) and urfave/cli as upstream's v2 mode uses them.
//
// The files:
//
//	ctlv2.go    Main: the v2 app, its global flags and exit statuses
//	keys.go     the key commands (get, set, mk, mkdir, update, rm, ls, watch, exec-watch)
//	cluster.go  member and cluster-health
//	auth.go     auth, user and role
//	backup.go   backup, on etcdutl's
package ctlv2
