package commands

import (
	"fmt"

	"etcdx/etcdctl/cli"
	"etcdx/server/version"
)

// App is etcdctl.
func App() *cli.App {
	g := &global{}
	return &cli.App{
		Name:      "etcdctl",
		Globals:   g.register,
		EnvPrefix: "ETCDCTL",
		// ETCDCTL_API selected the v2 or v3 API in old releases; 3 is the only one now.
		IgnoredEnv: []string{"ETCDCTL_API", "ETCDCTL_WATCH_KEY", "ETCDCTL_WATCH_RANGE_END"},
		Root: []*cli.Command{
			getCommand(g), putCommand(g), delCommand(g), txnCommand(g), compactionCommand(g),
			leaseCommand(g), memberCommand(g), endpointCommand(g), alarmCommand(g), defragCommand(g),
			downgradeCommand(g), moveLeaderCommand(g), snapshotCommand(g), watchCommand(g),
			lockCommand(g), electCommand(g), checkCommand(g),
			{Name: "version", Short: "Prints the version of etcdctl", Run: func(c *cli.Ctx) error {
				fmt.Fprintln(c.Stdout, "etcdctl version:", version.Version)
				fmt.Fprintln(c.Stdout, "API version:", version.APIVersion)
				return nil
			}},
		},
	}
}
