// Command upgradelab drives real etcd clusters through upgrade and downgrade plans.
package main

import (
	"os"

	"etcdx/upgradelab/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
