// Package cli is etcdctl's small subcommand layer on pflag: a tree of commands, global flags
// that may appear anywhere on the line, ETCDCTL_* environment variables for the global flags,
// and upstream etcdctl's exit statuses.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// Exit statuses, as upstream etcdctl uses them: an unknown command or flag is a plain error (1).
const (
	ExitOK            = 0
	ExitError         = 1
	ExitBadConnection = 2
	ExitInvalidData   = 3
	ExitBadFeature    = 4
	ExitInterrupted   = 5
	ExitBadArgs       = 128
)

// Error carries the exit status for an error, and the usage text printed after it (on standard
// output, as upstream prints a command's usage after a flag error).
type Error struct {
	Code  int
	Err   error
	Usage string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// BadArgs is a wrong number or shape of positional arguments (exit 128, as upstream).
func BadArgs(format string, a ...any) error {
	return &Error{Code: ExitBadArgs, Err: fmt.Errorf(format, a...)}
}

// Command is a node of the command tree.
type Command struct {
	Name  string
	Args  string // positional arguments, for help
	Short string
	// Flags registers the command's own flags.
	Flags func(fs *pflag.FlagSet)
	Run   func(c *Ctx) error
	Subs  []*Command
	// Values are the positional arguments completion offers ("completion bash|zsh").
	Values []string
}

// App is the whole program.
type App struct {
	Name    string
	Root    []*Command
	Globals func(fs *pflag.FlagSet)
	// EnvPrefix names the variables that set global flags (ETCDCTL_ENDPOINTS=...).
	EnvPrefix string
	// IgnoredEnv are variables with the prefix that are not flags (e.g. ETCDCTL_API).
	IgnoredEnv []string
	// FlagValues are the values completion offers for a flag, by flag name.
	FlagValues map[string][]string
}

// Ctx is what a running command sees.
type Ctx struct {
	Args           []string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Flags          *pflag.FlagSet
	Path           string // "lease grant"
	// Environ is the process environment (watch and lock read variables of their own).
	Environ []string
	// Dash is how many of Args came before a "--" separator, or -1 without one.
	Dash int
}

// Main runs the app on args and returns the exit status.
func (a *App) Main(args []string, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := a.run(args, environ, stdin, stdout, stderr)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "Error:", err)
	var e *Error
	if errors.As(err, &e) {
		if e.Usage != "" {
			fmt.Fprint(stdout, e.Usage)
		}
		return e.Code
	}
	return ExitError
}

func (a *App) run(args, environ []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == CompleteCommand {
		a.complete(stdout, args[1:])
		return nil
	}
	globals := pflag.NewFlagSet(a.Name, pflag.ContinueOnError)
	globals.SetOutput(io.Discard)
	a.Globals(globals)
	path, cmd, rest := a.find(args, globals)
	if cmd == nil || cmd.Run == nil {
		// A group alone ("etcdctl member") shows its subcommands, as upstream.
		if hasHelp(args) || len(path) > 0 || len(rest) == 0 {
			a.help(stdout, path, globals)
			return nil
		}
		w := firstWord(rest)
		return &Error{Code: ExitError, Err: fmt.Errorf("unknown command %q for %q%s\nRun '%s --help' for usage.", w, a.Name, suggest(a.Root, w), a.Name)}
	}
	fs := pflag.NewFlagSet(strings.Join(path, " "), pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.AddFlagSet(globals)
	if cmd.Flags != nil {
		cmd.Flags(fs)
	}
	fs.BoolP("help", "h", false, "help")
	if err := fs.Parse(rest); err != nil {
		var usage strings.Builder
		a.commandHelp(&usage, path, cmd, fs)
		return &Error{Code: ExitError, Err: err, Usage: usage.String()}
	}
	if h, _ := fs.GetBool("help"); h {
		a.commandHelp(stdout, path, cmd, fs)
		return nil
	}
	if err := a.applyEnv(environ, globals, fs); err != nil {
		return &Error{Code: ExitError, Err: err}
	}
	c := &Ctx{Args: fs.Args(), Stdin: stdin, Stdout: stdout, Stderr: stderr, Flags: fs, Path: strings.Join(path, " "),
		Environ: environ, Dash: fs.ArgsLenAtDash()}
	return cmd.Run(c)
}

// find walks the words of args down the command tree, skipping global flags and their values.
func (a *App) find(args []string, globals *pflag.FlagSet) (path []string, cmd *Command, rest []string) {
	level := a.Root
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" {
			break
		}
		if strings.HasPrefix(w, "-") {
			if takesValue(globals, w) && !strings.Contains(w, "=") {
				i++
			}
			continue
		}
		next := lookup(level, w)
		if next == nil {
			break
		}
		path = append(path, next.Name)
		cmd = next
		level = next.Subs
		args = append(append([]string(nil), args[:i]...), args[i+1:]...)
		i--
	}
	return path, cmd, args
}

// lookup finds the command w names among cs: its exact name, or else a prefix of exactly one
// name, as upstream resolves "etcdctl compact 5" to compaction.
func lookup(cs []*Command, w string) *Command {
	var prefixed []*Command
	for _, c := range cs {
		if c.Name == w {
			return c
		}
		if strings.HasPrefix(c.Name, w) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return nil
}

// suggest is upstream's "Did you mean this?" block for an unknown command w: the commands whose
// name starts with w or is at most two edits from it, in the order the commands are listed.
func suggest(cs []*Command, w string) string {
	var names []string
	lw := strings.ToLower(w)
	for _, c := range cs {
		if c.Name == CompleteCommand {
			continue
		}
		if strings.HasPrefix(c.Name, lw) || editDistance(lw, strings.ToLower(c.Name)) <= 2 {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + strings.Join(names, "\n\t") + "\n"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func takesValue(fs *pflag.FlagSet, w string) bool {
	name := strings.TrimLeft(w, "-")
	var f *pflag.Flag
	if strings.HasPrefix(w, "--") {
		f = fs.Lookup(name)
	} else if len(name) == 1 {
		f = fs.ShorthandLookup(name)
	}
	return f != nil && f.NoOptDefVal == ""
}

// applyEnv sets global flags not given on the command line from PREFIX_NAME variables.
func (a *App) applyEnv(environ []string, globals, fs *pflag.FlagSet) error {
	ignored := map[string]bool{}
	for _, n := range a.IgnoredEnv {
		ignored[n] = true
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, a.EnvPrefix+"_") || ignored[k] {
			continue
		}
		name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, a.EnvPrefix+"_"), "_", "-"))
		f := globals.Lookup(name)
		if f == nil {
			continue // upstream warns; variables for other tools share the prefix
		}
		if fs.Changed(name) {
			continue // the command line wins
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("environment variable %s: %w", k, err)
		}
	}
	return nil
}

func hasHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "help" {
			return true
		}
	}
	return false
}

func firstWord(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

func (a *App) subsOf(path []string) []*Command {
	level := a.Root
	for _, p := range path {
		if c := lookup(level, p); c != nil {
			level = c.Subs
		}
	}
	return level
}

func (a *App) help(w io.Writer, path []string, globals *pflag.FlagSet) {
	fmt.Fprintf(w, "NAME:\n  %s - A simple command line client for etcd3.\n\nUSAGE:\n  %s [flags] <command>\n\nCOMMANDS:\n", a.Name, a.Name)
	var lines []string
	var walk func(prefix string, cs []*Command)
	walk = func(prefix string, cs []*Command) {
		for _, c := range cs {
			if c.Run != nil {
				lines = append(lines, fmt.Sprintf("  %-26s%s", prefix+c.Name, c.Short))
			}
			walk(prefix+c.Name+" ", c.Subs)
		}
	}
	walk("", a.subsOf(path))
	sort.Strings(lines)
	fmt.Fprintln(w, strings.Join(lines, "\n"))
	fmt.Fprintf(w, "\nOPTIONS:\n%s", globals.FlagUsages())
}

func (a *App) commandHelp(w io.Writer, path []string, c *Command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "NAME:\n  %s - %s\n\nUSAGE:\n  %s %s [options] %s\n\nOPTIONS:\n", strings.Join(path, " "), c.Short, a.Name, strings.Join(path, " "), c.Args)
	own := pflag.NewFlagSet("", pflag.ContinueOnError)
	if c.Flags != nil {
		c.Flags(own)
	}
	fmt.Fprint(w, own.FlagUsages())
	fmt.Fprintln(w, "\nGLOBAL OPTIONS: see", a.Name, "--help")
}

// Std is the process's environment, for main.
func Std() ([]string, []string, io.Reader, io.Writer, io.Writer) {
	return os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr
}
