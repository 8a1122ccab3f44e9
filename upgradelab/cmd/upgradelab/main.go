// Command upgradelab drives real etcd clusters through upgrade and downgrade plans.
package main

import (
	"os"

	"etcdx/upgradelab/cli"
)

func main() {
	// testcontainers-go's reaper is an image that cannot be pulled here, and the lab removes
	// what it creates itself (and what killed runs left, by their labels).
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
