package commands

import (
	"fmt"

	"github.com/spf13/pflag"

	"etcdx/etcdctl/cli"
	"etcdx/etcdutl/tool"
)

// etcdctl 3.5 still had three offline commands that moved to etcdutl: snapshot restore,
// snapshot status and defrag --data-dir. At level 3.5 ours has them too, with 3.5's flags and
// deprecation notes, and runs etcdutl's command tree in-process for the work, as upstream 3.5's
// etcdctl runs etcdutl's code.

// offlineUntil is the first level without them.
const offlineUntil = "3.6"

// etcdutl runs an etcdutl command line in-process; etcdutl reports its own errors.
func etcdutl(c *cli.Ctx, args ...string) error {
	if code := tool.Run(args, c.Stdout, c.Stderr); code != 0 {
		return cli.Status(code)
	}
	return nil
}

// changedFlags are the flags given on the command line, to hand on to etcdutl.
func changedFlags(fs *pflag.FlagSet, names ...string) []string {
	var out []string
	for _, n := range names {
		if f := fs.Lookup(n); f != nil && f.Changed {
			out = append(out, "--"+n+"="+f.Value.String())
		}
	}
	return out
}

func snapshotRestore35() *cli.Command {
	flags := []string{"data-dir", "wal-dir", "initial-cluster", "initial-cluster-token", "initial-advertise-peer-urls",
		"name", "skip-hash-check", "bump-revision", "mark-compacted", "initial-memory-map-size"}
	return &cli.Command{Name: "restore", Args: "<filename> [options]", Short: "Restores an etcd member snapshot to an etcd directory",
		Long: "Moved to `etcdutl snapshot restore ...`\n", Until: offlineUntil,
		Flags: func(fs *pflag.FlagSet) {
			fs.String("data-dir", "", "Path to the data directory")
			fs.String("wal-dir", "", "Path to the WAL directory (use --data-dir if none given)")
			fs.String("initial-cluster", "default=http://localhost:2380", "Initial cluster configuration for restore bootstrap")
			fs.String("initial-cluster-token", "etcd-cluster", "Initial cluster token for the etcd cluster during restore bootstrap")
			fs.String("initial-advertise-peer-urls", "http://localhost:2380", "List of this member's peer URLs to advertise to the rest of the cluster")
			fs.String("name", "default", "Human-readable name for this member")
			fs.Bool("skip-hash-check", false, "Ignore snapshot integrity hash value (required if copied from data directory)")
			fs.Uint64("bump-revision", 0, "How much to increase the latest revision after restore")
			fs.Bool("mark-compacted", false, "Mark the latest revision after restore as the point of scheduled compaction (required if --bump-revision > 0, disallowed otherwise)")
			fs.Uint64("initial-memory-map-size", 0, "Initial memory map size of the database in bytes. It uses the default value if not defined or defined to 0")
		},
		Run: func(c *cli.Ctx) error {
			fmt.Fprint(c.Stderr, "Deprecated: Use `etcdutl snapshot restore` instead.\n\n")
			args := append([]string{"snapshot", "restore"}, c.Args...)
			return etcdutl(c, append(args, changedFlags(c.Flags, flags...)...)...)
		}}
}

func snapshotStatus35(g *global) *cli.Command {
	return &cli.Command{Name: "status", Args: "<filename>", Short: "[deprecated] Gets backend snapshot status of a given file",
		Long: `When --write-out is set to simple, this command prints out comma-separated status lists for each endpoint.
The items in the lists are hash, revision, total keys, total size.

Moved to 'etcdutl snapshot status ...'
`, Until: offlineUntil,
		Run: func(c *cli.Ctx) error {
			fmt.Fprint(c.Stderr, "Deprecated: Use `etcdutl snapshot status` instead.\n\n")
			return etcdutl(c, append(append([]string{"snapshot", "status"}, c.Args...), "--write-out="+g.writeOut)...)
		}}
}

// defragDataDir is defrag --data-dir at 3.5: the named data dir, offline, instead of the members.
func defragDataDir(c *cli.Ctx, dir string) error {
	fmt.Fprint(c.Stderr, "Use `etcdutl defrag` instead. The --data-dir is going to be decomissioned in v3.6.\n\n")
	return etcdutl(c, "defrag", "--data-dir", dir)
}
