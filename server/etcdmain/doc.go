// Package etcdmain is the etcd command: upstream's flags (Go flag syntax, so -name and --name
// both work), ETCD_* environment variables, the YAML config file, and the process lifecycle
// around an embedded member. Exit statuses are upstream's: 2 for a command line the flag
// parser rejects, 1 for a configuration that fails verification or a member that fails.
//
// The files:
//
//	etcdmain.go  the command: flags, environment, config file, the member's lifecycle
//	flags.go     the flag set, at this binary's level, with upstream's names and defaults
//	configfile.go the YAML config file's keys, as upstream reads them
//	discovery.go the discovery flags
//	gateway.go   `etcd gateway` and `etcd grpc-proxy`, run as upstream runs them
//	grpcproxy.go `etcd grpc-proxy start`'s flags
package etcdmain
