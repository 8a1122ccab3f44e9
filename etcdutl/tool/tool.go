package tool

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"etcdx/pkg/buildinfo"
	"etcdx/server/logutil"
)

// Exit statuses, as upstream etcdutl's: 1 for a failed command or a command line it cannot
// parse, 4 for an output format the command lacks, 128 for bad arguments.
const (
	exitError      = 1
	exitBadFeature = 4
	exitBadArgs    = 128
)

// exitErr is a command's failure with its exit status.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

// usageError is a command line etcdutl cannot run (exit 1).
func usageError(format string, a ...any) error {
	return &exitErr{code: exitError, err: fmt.Errorf(format, a...)}
}

// badArgs is upstream's ExitBadArgs (128).
func badArgs(format string, a ...any) error {
	return &exitErr{code: exitBadArgs, err: fmt.Errorf(format, a...)}
}

// globals are the flags every command takes, and where output goes.
type globals struct {
	stdout, stderr io.Writer
	// format is -w/--write-out.
	format string
	// lockTimeout is --timeout (3.7): how long to wait for a member's database lock.
	lockTimeout time.Duration
}

// log is upstream etcdutl's log: its console lines on standard error.
func (g *globals) log() *slog.Logger { return logutil.ToolLogger(g.stderr) }

// Run executes one command line and returns the exit status. As upstream's, a command line cobra
// refuses is reported by cobra (the error and the usage) and then once more on its own; a
// command's failure once.
func Run(args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr, lockTimeout: time.Second}
	root := newRoot(g)
	root.SetArgs(args)
	// Help goes to standard output and a refused command line's usage to standard error, as
	// cobra does by default (so stdout is the process's, here).
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var e *exitErr
	if errors.As(err, &e) {
		return e.code
	}
	return exitError
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:        "etcdutl",
		Short:      "An administrative command line tool for etcd3.",
		SuggestFor: []string{"etcdutl"},
	}
	// Upstream enables prefix matching process-wide; here it is this tree's.
	cobra.EnablePrefixMatching = true
	if buildinfo.AtLeast("3.7") {
		root.PersistentFlags().DurationVar(&g.lockTimeout, "timeout", 10*time.Second, "time to wait to obtain a file lock on db file, 0 to block indefinitely")
	}
	root.PersistentFlags().StringVarP(&g.format, "write-out", "w", "simple", "set the output format (fields, json, protobuf, simple, table)")
	root.RegisterFlagCompletionFunc("write-out", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"fields", "json", "protobuf", "simple", "table"}, cobra.ShellCompDirectiveDefault
	})
	root.AddCommand(defragCommand(g), snapshotCommand(g), hiddenBelow(hashkvCommand(g), "3.6"), versionCommand(g),
		hiddenBelow(completionCommand(), "3.6"), hiddenBelow(migrateCommand(g), "3.6"), backupCommand(g), checkCommand(g))
	// Help is the usage alone, as upstream's.
	root.SetHelpTemplate(`{{.UsageString}}`)
	return root
}

// runs wraps a command's work: once it runs, a failure is reported by run alone (no usage).
func runs(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := f(cmd, args)
		var e *exitErr
		if err != nil && !errors.As(err, &e) {
			err = &exitErr{code: exitError, err: err}
		}
		return err
	}
}

// outputFormat is -w for a command that prints simple, json, table or fields.
func (g *globals) outputFormat() (string, error) {
	switch g.format {
	case "simple", "json", "table", "fields":
		return g.format, nil
	case "protobuf":
		return "", &exitErr{code: exitBadFeature, err: fmt.Errorf("protobuf not supported as output format")}
	}
	return "", &exitErr{code: exitBadFeature, err: fmt.Errorf("unsupported output format")}
}

func versionCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Prints the version of etcdutl",
		RunE: runs(func(*cobra.Command, []string) error {
			fmt.Fprintf(g.stdout, "etcdutl version: %s\nAPI version: %s\n", buildinfo.Version, buildinfo.APIVersion)
			return nil
		}),
	}
}

func completionCommand() *cobra.Command {
	return &cobra.Command{
		Use:                   "completion [bash|zsh|fish|powershell]",
		Short:                 "Generate completion script",
		Long:                  "Writes the shell completion script for etcdutl, e.g. source <(etcdutl completion bash).",
		DisableFlagsInUseLine: true,
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		Args:                  cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: runs(func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return cmd.Root().GenBashCompletion(out)
			case "zsh":
				return cmd.Root().GenZshCompletion(out)
			case "fish":
				return cmd.Root().GenFishCompletion(out, true)
			}
			return cmd.Root().GenPowerShellCompletionWithDesc(out)
		}),
	}
}

// requireFlags marks flags required, as upstream marks them.
func requireFlags(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		if err := cmd.MarkFlagRequired(n); err != nil {
			panic(fmt.Sprintf("etcdutl: %s has no flag %s", cmd.Name(), n)) // a programming error
		}
	}
}

// hiddenBelow hides a command of ours that upstream's tree gained at level (hashkv, migrate and
// completion at 3.6), so 3.5's help lists 3.5's commands; it still runs.
func hiddenBelow(cmd *cobra.Command, level string) *cobra.Command {
	cmd.Hidden = !buildinfo.AtLeast(level)
	return cmd
}

// hiddenAbove hides a command of ours that upstream's tree at this level does not have, so help
// lists upstream's commands; it still runs.
func hiddenAbove(cmd *cobra.Command, level string) *cobra.Command {
	cmd.Hidden = buildinfo.AtLeast(level)
	return cmd
}
