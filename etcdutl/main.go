// Command etcdutl works on a stopped member's data and on snapshot files, offline. It never
// changes its input unless the command exists to do so (restore writes a new data dir).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"etcdx/pkg/buildinfo"
)

// Exit statuses, as upstream etcdutl's: 1 for a failed command or a command line it cannot
// parse, 4 for an output format the command lacks, 128 for bad arguments.
const (
	exitError      = 1
	exitBadFeature = 4
	exitBadArgs    = 128
)

// exitErr is an error with its exit status; usage asks for the usage text after it, as upstream
// prints it after a flag error.
type exitErr struct {
	code  int
	err   error
	usage bool
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

// usageError is a command line etcdutl cannot parse (exit 1, usage follows).
func usageError(format string, a ...any) error {
	return &exitErr{code: exitError, err: fmt.Errorf(format, a...), usage: true}
}

// badArgs is upstream's ExitBadArgs (128).
func badArgs(format string, a ...any) error {
	return &exitErr{code: exitBadArgs, err: fmt.Errorf(format, a...)}
}

// requiredFlags is cobra's refusal of missing required flags, which upstream etcdutl prints.
func requiredFlags(names ...string) error {
	return usageError("required flag(s) \"%s\" not set", strings.Join(names, `", "`))
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage: etcdutl <command> [flags]

Commands:
  backup --data-dir D --backup-dir B             consistent copy of a stopped member's data
  check --data-dir D                             read a stopped member's WAL, snapshots and database
                                                 and report every inconsistency (changes nothing)
  defrag --data-dir D                            defragment a stopped member's database
  hashkv <file> [--rev N]                        hash of the key-value store, as HashKV answers
  migrate --data-dir D --target-version X.Y      move a stopped member's storage to another version
  snapshot restore <file> --data-dir D ...       restore a snapshot into a new data directory
  snapshot status <file>                         hash, revision, total keys, size, storage version
  version                                        print the version

Commands that print a result take -w/--write-out simple|json|table. A command may be shortened
to a prefix that names only it ("etcdutl sn st" is snapshot status).
`

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var e *exitErr
	if errors.As(err, &e) {
		if e.usage {
			fmt.Fprint(stderr, usage)
		}
		return e.code
	}
	return exitError
}

// The commands, in upstream's order, then ours; snapshot's subcommands.
var (
	commandNames  = []string{"defrag", "snapshot", "hashkv", "version", "migrate", "backup", "check"}
	snapshotNames = []string{"restore", "status"}
)

// resolve names the command w stands for: its exact name, or a prefix of exactly one name.
func resolve(names []string, w string) string {
	match := ""
	for _, n := range names {
		if n == w {
			return n
		}
		if strings.HasPrefix(n, w) {
			if match != "" {
				return ""
			}
			match = n
		}
	}
	return match
}

func dispatch(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	switch args[0] {
	case "--version":
		args[0] = "version"
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	switch resolve(commandNames, args[0]) {
	case "version":
		fmt.Fprintf(stdout, "etcdutl version: %s\nAPI version: %s\n", buildinfo.Version, buildinfo.APIVersion)
		return nil
	case "snapshot":
		sub := ""
		if len(args) > 1 {
			sub = resolve(snapshotNames, args[1])
		}
		switch sub {
		case "restore":
			return restore(args[2:], stdout)
		case "status":
			return status(args[2:], stdout)
		}
		// A group without (or with an unknown) subcommand shows its usage, as upstream.
		fmt.Fprint(stdout, usage)
		return nil
	case "migrate":
		return migrate(args[1:], stdout)
	case "backup":
		return backup(args[1:], stdout)
	case "defrag":
		return defrag(args[1:], stdout)
	case "hashkv":
		return hashkv(args[1:], stdout)
	case "check":
		return check(args[1:], stdout)
	}
	return &exitErr{code: exitError, err: fmt.Errorf("unknown command %q for \"etcdutl\"\nRun 'etcdutl --help' for usage.", args[0])}
}

func oneFile(fs *pflag.FlagSet, args []string, what string) (string, error) {
	if err := parseNoArgs(fs, args, 1); err != nil {
		return "", err
	}
	return fs.Arg(0), nil
}

// parseNoArgs parses flags and insists on exactly n positional arguments, refusing others with
// upstream's statuses: snapshot status and restore say so with 128, the rest as cobra does (1).
func parseNoArgs(fs *pflag.FlagSet, args []string, n int) error {
	if err := fs.Parse(args); err != nil {
		return &exitErr{code: exitError, err: err, usage: true}
	}
	switch {
	case fs.NArg() == n:
		return nil
	case strings.HasPrefix(fs.Name(), "snapshot "):
		return badArgs("%s requires exactly one argument", fs.Name())
	case n == 0:
		return usageError("%s takes no arguments, got %q", fs.Name(), fs.Args())
	}
	return usageError("accepts %d arg(s), received %d", n, fs.NArg())
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
		return "", &exitErr{code: exitBadFeature, err: fmt.Errorf("unsupported output format")}
	}
}
