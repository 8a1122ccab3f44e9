// Command etcdutl works on a stopped member's data and on snapshot files, offline. It never
// changes its input unless the command exists to do so (restore writes a new data dir).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"etcdx/server/embed"
	"etcdx/server/snapshot"
	"etcdx/server/version"
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
  snapshot restore <file>   restore a snapshot into a new data directory
  snapshot status <file>    show a snapshot's hash, revision, key count, size and storage version
  version                   print the version
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
		fmt.Fprintf(stdout, "etcdutl version: %s\nAPI version: %s\n", version.Version, version.APIVersion)
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
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

func oneFile(fs *pflag.FlagSet, args []string, what string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", usageError{err}
	}
	if fs.NArg() != 1 {
		return "", usageError{fmt.Errorf("%s requires exactly one snapshot file argument", what)}
	}
	return fs.Arg(0), nil
}

func restore(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("snapshot restore", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dataDir := fs.String("data-dir", "", "Path to the output data directory (default <name>.etcd)")
	name := fs.String("name", embed.DefaultName, "Human-readable name for this member")
	initialCluster := fs.String("initial-cluster", "", "Initial cluster configuration for restore bootstrap (default <name>=<initial-advertise-peer-urls>)")
	token := fs.String("initial-cluster-token", embed.DefaultInitialClusterToken, "Initial cluster token for the etcd cluster during restore bootstrap")
	peerURLs := fs.StringSlice("initial-advertise-peer-urls", []string{embed.DefaultListenPeerURLs}, "List of this member's peer URLs to advertise to the rest of the cluster")
	skipHash := fs.Bool("skip-hash-check", false, "Ignore snapshot integrity hash value (required if copied from data directory)")
	file, err := oneFile(fs, args, "snapshot restore")
	if err != nil {
		return err
	}
	dir := *dataDir
	if dir == "" {
		dir = *name + ".etcd"
	}
	ic := *initialCluster
	if ic == "" {
		var parts []string
		for _, u := range *peerURLs {
			parts = append(parts, *name+"="+u)
		}
		ic = strings.Join(parts, ",")
	}
	cluster, err := embed.ParseInitialCluster(ic)
	if err != nil {
		return usageError{fmt.Errorf("--initial-cluster: %w", err)}
	}
	if err := snapshot.Restore(snapshot.RestoreConfig{SnapshotPath: file, DataDir: dir, Name: *name, PeerURLs: *peerURLs,
		InitialCluster: cluster, InitialClusterToken: *token, SkipHashCheck: *skipHash}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored snapshot %s into %s (member %s)\n", file, dir, *name)
	return nil
}

func status(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("snapshot status", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.StringP("write-out", "w", "simple", "set the output format (simple, json, table)")
	file, err := oneFile(fs, args, "snapshot status")
	if err != nil {
		return err
	}
	if *format != "simple" && *format != "json" && *format != "table" {
		return usageError{fmt.Errorf("--write-out: unknown format %q (want simple, json or table)", *format)}
	}
	st, err := snapshot.GetStatus(file)
	if err != nil {
		return err
	}
	size := humanize.Bytes(uint64(st.TotalSize))
	switch *format {
	case "json":
		return json.NewEncoder(stdout).Encode(st)
	case "table":
		printTable(stdout, []string{"HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE", "VERSION"},
			[][]string{{fmt.Sprintf("%x", st.Hash), fmt.Sprint(st.Revision), fmt.Sprint(st.TotalKey), size, st.Version}})
	default:
		fmt.Fprintf(stdout, "%x, %d, %d, %s, %s\n", st.Hash, st.Revision, st.TotalKey, size, st.Version)
	}
	return nil
}

// printTable draws the bordered, centred table upstream's tools print.
func printTable(w io.Writer, header []string, rows [][]string) {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	line := "+"
	for _, n := range widths {
		line += strings.Repeat("-", n+2) + "+"
	}
	center := func(s string, n int) string {
		left := (n - len(s)) / 2
		return strings.Repeat(" ", left) + s + strings.Repeat(" ", n-len(s)-left)
	}
	right := func(s string, n int) string { return strings.Repeat(" ", n-len(s)) + s }
	fmt.Fprintln(w, line)
	cells := make([]string, len(header))
	for i, h := range header {
		cells[i] = " " + center(h, widths[i]) + " "
	}
	fmt.Fprintln(w, "|"+strings.Join(cells, "|")+"|")
	fmt.Fprintln(w, line)
	for _, r := range rows {
		for i, c := range r {
			cells[i] = " " + right(c, widths[i]) + " "
		}
		fmt.Fprintln(w, "|"+strings.Join(cells, "|")+"|")
	}
	fmt.Fprintln(w, line)
}
