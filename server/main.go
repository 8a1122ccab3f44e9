// Command etcd runs one member of an etcd cluster.
package main

import (
	"os"

	"etcdx/server/etcdmain"
)

func main() {
	os.Exit(etcdmain.Main(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}
