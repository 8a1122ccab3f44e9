package commands

import (
	"fmt"
	"io"

	"etcdx/etcdctl/cli"
	"etcdx/etcdctl/printer"
	"etcdx/pkg/buildinfo"
)

// App is etcdctl.
func App() *cli.App {
	g := &global{}
	var app *cli.App // completion asks the whole app for its script
	app = &cli.App{
		Name:      "etcdctl",
		Globals:   g.register,
		EnvPrefix: "ETCDCTL",
		// ETCDCTL_API selected the v2 or v3 API in old releases; 3 is the only one now.
		IgnoredEnv: []string{"ETCDCTL_API", "ETCDCTL_WATCH_KEY", "ETCDCTL_WATCH_RANGE_END"},
		// In upstream's order, which its "Did you mean this?" suggestions follow.
		Root: []*cli.Command{
			getCommand(g), putCommand(g), delCommand(g), txnCommand(g), compactionCommand(g),
			alarmCommand(g), defragCommand(g), endpointCommand(g), moveLeaderCommand(g), watchCommand(g),
			versionCommand(), leaseCommand(g), memberCommand(g), snapshotCommand(g), lockCommand(g),
			electCommand(g), authCommand(g), userCommand(g), roleCommand(g), checkCommand(g), makeMirrorCommand(g),
			{Name: "completion", Args: "[bash|zsh]", Short: "Generate completion script", Values: []string{"bash", "zsh"},
				Run: func(c *cli.Ctx) error {
					if len(c.Args) != 1 {
						return cli.BadArgs("completion takes one argument: bash or zsh")
					}
					s, err := app.Script(c.Args[0])
					if err != nil {
						return err
					}
					_, err = io.WriteString(c.Stdout, s)
					return err
				}},
			downgradeCommand(g),
		},
		FlagValues: map[string][]string{
			"write-out": printer.Formats, "consistency": {"l", "s"}, "load": {"s", "m", "l", "xl"},
			"sort-by": {"CREATE", "KEY", "MODIFY", "VALUE", "VERSION"}, "order": {"ASCEND", "DESCEND"},
		},
	}
	return app
}

func versionCommand() *cli.Command {
	return &cli.Command{Name: "version", Short: "Prints the version of etcdctl", Run: func(c *cli.Ctx) error {
		fmt.Fprintln(c.Stdout, "etcdctl version:", buildinfo.Version)
		fmt.Fprintln(c.Stdout, "API version:", buildinfo.APIVersion)
		return nil
	}}
}
