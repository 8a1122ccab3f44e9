// Package main will hold etcdctl, the online operator CLI: the same commands, flags, ETCDCTL_*
// environment variables and output shapes as upstream etcdctl 3.6, built on
// go.etcd.io/etcd/client/v3 and github.com/spf13/pflag.
package main
