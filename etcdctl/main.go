// Command etcdctl is the online operator CLI: the same commands, flags, ETCDCTL_* environment
// variables and output shapes as upstream etcdctl 3.6, built on go.etcd.io/etcd/client/v3. At
// level 3.5, ETCDCTL_API=2 selects upstream 3.5's v2 mode (package ctlv2).
package main

import (
	"fmt"
	"os"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/commands"
	"etcdx/etcdctl/ctlv2"
	"etcdx/pkg/buildinfo"
)

func main() {
	if !buildinfo.LevelAtLeast(buildinfo.Level, "3.6") {
		// As upstream 3.5: the variable is read once and not passed on.
		api := os.Getenv("ETCDCTL_API")
		os.Unsetenv("ETCDCTL_API")
		switch api {
		case "", "3":
		case "2":
			os.Exit(ctlv2.Main(buildinfo.UpstreamRelease(buildinfo.Level), os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr))
		default:
			fmt.Fprintf(os.Stderr, "unsupported API version: %v\n", api)
			os.Exit(1)
		}
	}
	os.Exit(commands.App().Main(cli.Std()))
}
