// Command discovery runs the v3 discovery service and manages its tokens.
package main

import (
	"os"

	"etcdx/discovery/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
