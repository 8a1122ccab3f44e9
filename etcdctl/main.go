// Command etcdctl is the online operator CLI: the same commands, flags, ETCDCTL_* environment
// variables and output shapes as upstream etcdctl 3.6, built on go.etcd.io/etcd/client/v3.
package main

import (
	"os"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/commands"
)

func main() {
	os.Exit(commands.App().Main(cli.Std()))
}
