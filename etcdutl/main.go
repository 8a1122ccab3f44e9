// Command etcdutl works on a stopped member's data and on snapshot files, offline. It never
// changes its input unless the command exists to do so (restore writes a new data dir).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"etcdx/pkg/buildinfo"
)

// Exit statuses: 1 for a failed command, 2 for bad usage.
const (
	exitError    = 1
	exitBadUsage = 2
)

type usageError struct{ error }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage: etcdutl <command> [flags]

Commands:
  backup --data-dir D --backup-dir B             consistent copy of a stopped member's data
  defrag --data-dir D                            defragment a stopped member's database
  hashkv <file> [--rev N]                        hash of the key-value store, as HashKV answers
  migrate --data-dir D --target-version X.Y      move a stopped member's storage to another version
  snapshot restore <file> --data-dir D ...       restore a snapshot into a new data directory
  snapshot status <file>                         hash, revision, total keys, size, storage version
  version                                        print the version

Commands that print a result take -w/--write-out simple|json|table.
`

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprint(stderr, usage)
		return exitBadUsage
	}
	return exitError
}

func dispatch(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{fmt.Errorf("no command given")}
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintf(stdout, "etcdutl version: %s\nAPI version: %s\n", buildinfo.Version, buildinfo.APIVersion)
		return nil
	case "snapshot":
		if len(args) < 2 {
			return usageError{fmt.Errorf("snapshot needs a subcommand: restore or status")}
		}
		switch args[1] {
		case "restore":
			return restore(args[2:], stdout)
		case "status":
			return status(args[2:], stdout)
		}
		return usageError{fmt.Errorf("unknown snapshot subcommand %q", args[1])}
	case "migrate":
		return migrate(args[1:], stdout)
	case "backup":
		return backup(args[1:], stdout)
	case "defrag":
		return defrag(args[1:], stdout)
	case "hashkv":
		return hashkv(args[1:], stdout)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

func oneFile(fs *pflag.FlagSet, args []string, what string) (string, error) {
	if err := parseNoArgs(fs, args, 1); err != nil {
		return "", err
	}
	return fs.Arg(0), nil
}

// parseNoArgs parses flags and insists on exactly n positional arguments.
func parseNoArgs(fs *pflag.FlagSet, args []string, n int) error {
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() != n {
		if n == 0 {
			return usageError{fmt.Errorf("%s takes no arguments, got %q", fs.Name(), fs.Args())}
		}
		return usageError{fmt.Errorf("%s requires exactly %d file argument", fs.Name(), n)}
	}
	return nil
}

// newFlags returns a flag set that reports errors instead of printing them.
func newFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// outputFormat registers -w/--write-out and returns a checker for its value.
func outputFormat(fs *pflag.FlagSet) func() (string, error) {
	f := fs.StringP("write-out", "w", "simple", "set the output format (simple, json, table)")
	return func() (string, error) {
		switch *f {
		case "simple", "json", "table":
			return *f, nil
		}
		return "", usageError{fmt.Errorf("--write-out: unknown format %q (want simple, json or table)", *f)}
	}
}
