package commands

import (
	"fmt"

	"etcdx/etcdctl/cli"
	"etcdx/pkg/buildinfo"
)

// The sections of 3.7's help, in upstream's order.
const (
	groupKV          = "kv"
	groupMaintenance = "cluster maintenance"
	groupConcurrency = "concurrency"
	groupAuth        = "authentication"
	groupUtility     = "utility"
)

// App is etcdctl at the level this binary was built for.
func App() *cli.App { return AppAt(buildinfo.Level) }

// AppAt is etcdctl as the given upstream line shows it ("3.6").
func AppAt(level string) *cli.App {
	g := &global{level: level}
	atLeast := func(want string) bool { return buildinfo.LevelAtLeast(level, want) }
	// group places a top-level command in 3.7's help; hint makes its short text point at its
	// subcommands there, as upstream's group commands do.
	group := func(id string, c *cli.Command) *cli.Command { c.Group = id; return c }
	hint := func(id string, c *cli.Command) *cli.Command { c.HintSubs = true; return group(id, c) }
	return &cli.App{
		Name:       "etcdctl",
		Short:      "A simple command line client for etcd3.",
		Version:    buildinfo.UpstreamRelease(level),
		APIVersion: level,
		AtLeast:    atLeast,
		Globals:    g.register,
		EnvPrefix:  "ETCDCTL",
		// ETCDCTL_API selected the v2 or v3 API in old releases; 3 is the only one now.
		IgnoredEnv: []string{"ETCDCTL_API", "ETCDCTL_WATCH_KEY", "ETCDCTL_WATCH_RANGE_END"},
		Groups: []cli.Group{
			{ID: groupKV, Title: "Key-value commands"},
			{ID: groupMaintenance, Title: "Cluster maintenance commands"},
			{ID: groupConcurrency, Title: "Concurrency commands"},
			{ID: groupAuth, Title: "Authentication commands"},
			{ID: groupUtility, Title: "Utility commands"},
		},
		HelpGroup: groupUtility,
		// In upstream's order, which its "Did you mean this?" suggestions follow.
		Root: []*cli.Command{
			group(groupKV, getCommand(g)), group(groupKV, putCommand(g)), group(groupKV, delCommand(g)),
			group(groupKV, txnCommand(g)), group(groupKV, compactionCommand(g)),
			hint(groupMaintenance, alarmCommand(g)), group(groupMaintenance, defragCommand(g)),
			hint(groupMaintenance, endpointCommand(g)), group(groupMaintenance, moveLeaderCommand(g)),
			group(groupKV, watchCommand(g)), group(groupUtility, versionCommand(level)), hint(groupKV, leaseCommand(g)),
			hint(groupMaintenance, memberCommand(g)), group(groupMaintenance, snapshotCommand(g)),
			group(groupUtility, makeMirrorCommand(g)), group(groupConcurrency, lockCommand(g)),
			group(groupConcurrency, electCommand(g)), hint(groupAuth, authCommand(g)), hint(groupAuth, userCommand(g)),
			hint(groupAuth, roleCommand(g)), hint(groupUtility, checkCommand(g)), group(groupUtility, completionCommand()),
			hint(groupMaintenance, downgradeCommand(g)),
		},
		FlagValues: map[string][]string{
			"write-out": {"fields", "json", "protobuf", "simple", "table"}, "consistency": {"l", "s"}, "load": {"s", "m", "l", "xl"},
			"sort-by": {"CREATE", "KEY", "MODIFY", "VALUE", "VERSION"}, "order": {"ASCEND", "DESCEND"},
		},
	}
}

func versionCommand(level string) *cli.Command {
	return &cli.Command{Name: "version", Short: "Prints the version of etcdctl", Run: func(c *cli.Ctx) error {
		fmt.Fprintln(c.Stdout, "etcdctl version:", buildinfo.UpstreamRelease(level))
		fmt.Fprintln(c.Stdout, "API version:", level)
		return nil
	}}
}

// completionCommand prints cobra's script for a shell, as upstream's (from 3.6).
func completionCommand() *cli.Command {
	return &cli.Command{Name: "completion", Args: "[bash|zsh|fish|powershell]", Short: "Generate completion script",
		Long: completionHelp, Since: "3.6", BareUse: true, Values: []string{"bash", "zsh", "fish", "powershell"},
		Run: func(c *cli.Ctx) error { return c.Script(c.Args[0]) }}
}

// completionHelp is the long help of upstream's completion command.
const completionHelp = `To load completions:

Bash:

  $ source <(etcdctl completion bash)

  # To load completions for each session, execute once:
  # Linux:
  $ etcdctl completion bash > /etc/bash_completion.d/etcdctl
  # macOS:
  $ etcdctl completion bash > /usr/local/etc/bash_completion.d/etcdctl

Zsh:

  # If shell completion is not already enabled in your environment,
  # you will need to enable it.  You can execute the following once:

  $ echo "autoload -U compinit; compinit" >> ~/.zshrc

  # To load completions for each session, execute once:
  $ etcdctl completion zsh > "${fpath[1]}/_etcdctl"

  # You will need to start a new shell for this setup to take effect.

fish:

  $ etcdctl completion fish | source

  # To load completions for each session, execute once:
  $ etcdctl completion fish > ~/.config/fish/completions/etcdctl.fish

PowerShell:

  PS> etcdctl completion powershell | Out-String | Invoke-Expression

  # To load completions for every new session, run:
  PS> etcdctl completion powershell > etcdctl.ps1
  # and source this file from your PowerShell profile.
`
