package tool

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"etcdx/etcdutl/offline"
	"etcdx/pkg/buildinfo"
	"etcdx/pkg/table"
	"etcdx/server/membership"
)

func snapshotCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot <subcommand>",
		Short: "Manages etcd node snapshots",
	}
	cmd.AddCommand(snapshotRestoreCommand(g), snapshotStatusCommand(g))
	if !buildinfo.AtLeast("3.6") {
		cmd.AddCommand(snapshotSave35())
	}
	return cmd
}

// snapshotSave35 is 3.5's deprecated stub: a snapshot is downloaded with etcdctl.
func snapshotSave35() *cobra.Command {
	return &cobra.Command{
		Use:                   "save <filename>",
		Short:                 "Stores an etcd node backend snapshot to a given file",
		Hidden:                true,
		DisableFlagsInUseLine: true,
		Deprecated:            "Use `etcdctl snapshot save` to download snapshot",
		RunE: runs(func(*cobra.Command, []string) error {
			return badArgs("In order to download snapshot use: `etcdctl snapshot save ...`")
		}),
	}
}

func snapshotRestoreCommand(g *globals) *cobra.Command {
	var dataDir, walDir, initialCluster, token, peerURLs, name string
	var skipHash, markCompacted bool
	var mmapSize, bump uint64
	cmd := &cobra.Command{
		Use:   "restore <filename> --data-dir {output dir} [options]",
		Short: "Restores an etcd member snapshot to an etcd directory",
		RunE: runs(func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return badArgs("snapshot restore requires exactly one argument")
			}
			if (bump == 0 && markCompacted) || (bump > 0 && !markCompacted) {
				return badArgs("--mark-compacted required if --revision-bump > 0")
			}
			dir := dataDir
			if dir == "" {
				dir = name + ".etcd"
			}
			cluster, err := membership.ParseInitialCluster(initialCluster)
			if err != nil {
				return usageError("--initial-cluster: %v", err)
			}
			if err := offline.Restore(offline.RestoreConfig{SnapshotPath: args[0], DataDir: dir, WALDir: walDir, Name: name,
				PeerURLs: strings.Split(peerURLs, ","), InitialCluster: cluster, InitialClusterToken: token,
				SkipHashCheck: skipHash, BumpRevision: int64(bump), MarkCompacted: markCompacted, InitialMmapSize: int64(mmapSize),
				Log: g.log()}); err != nil {
				return err
			}
			return nil // as upstream, nothing on standard output: the log says what was restored
		}),
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "Path to the output data directory")
	f.StringVar(&walDir, "wal-dir", "", "Path to the WAL directory (use --data-dir if none given)")
	f.StringVar(&initialCluster, "initial-cluster", membership.DefaultName+"="+membership.DefaultPeerURL, "Initial cluster configuration for restore bootstrap")
	f.StringVar(&token, "initial-cluster-token", membership.DefaultToken, "Initial cluster token for the etcd cluster during restore bootstrap")
	f.StringVar(&peerURLs, "initial-advertise-peer-urls", membership.DefaultPeerURL, "List of this member's peer URLs to advertise to the rest of the cluster")
	f.StringVar(&name, "name", membership.DefaultName, "Human-readable name for this member")
	f.BoolVar(&skipHash, "skip-hash-check", false, "Ignore snapshot integrity hash value (required if copied from data directory)")
	f.Uint64Var(&mmapSize, "initial-memory-map-size", 10<<30, "Initial memory map size of the database in bytes. It uses the default value if not defined or defined to 0")
	f.Uint64Var(&bump, "bump-revision", 0, "How much to increase the latest revision after restore")
	f.BoolVar(&markCompacted, "mark-compacted", false, "Mark the latest revision after restore as the point of scheduled compaction (required if --bump-revision > 0, disallowed otherwise)")
	if !buildinfo.AtLeast("3.6") {
		requireFlags(cmd, "data-dir") // 3.5 asks for it before looking at the arguments
	}
	return cmd
}

func snapshotStatusCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status <filename>",
		Short: "Gets backend snapshot status of a given file",
		RunE: runs(func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return badArgs("snapshot status requires exactly one argument")
			}
			f, err := g.outputFormat()
			if err != nil {
				return err
			}
			st, err := offline.GetStatus(args[0])
			if err != nil {
				return err
			}
			size := humanize.Bytes(uint64(st.TotalSize))
			if !buildinfo.AtLeast("3.6") {
				return g.status35(f, st, size)
			}
			switch f {
			case "json":
				return json.NewEncoder(g.stdout).Encode(st)
			case "table":
				table.Write(g.stdout, table.ForLevel(buildinfo.Level), []string{"HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE", "VERSION"},
					[][]string{{fmt.Sprintf("%x", st.Hash), fmt.Sprint(st.Revision), fmt.Sprint(st.TotalKey), size, st.Version}})
			case "fields":
				fmt.Fprintf(g.stdout, "\"Hash\" : %d\n\"Revision\" : %d\n\"Keys\" : %d\n\"Size\" : %d\n\"Version\" : %s\n",
					st.Hash, st.Revision, st.TotalKey, st.TotalSize, st.Version)
			default:
				fmt.Fprintf(g.stdout, "%x, %d, %d, %s, %s\n", st.Hash, st.Revision, st.TotalKey, size, st.Version)
			}
			return nil
		}),
	}
}

// status35 is snapshot status as 3.5 printed it: every bucket's keys counted, no version.
func (g *globals) status35(format string, st *offline.Status, size string) error {
	switch format {
	case "json":
		return json.NewEncoder(g.stdout).Encode(struct {
			Hash      uint32 `json:"hash"`
			Revision  int64  `json:"revision"`
			TotalKey  int    `json:"totalKey"`
			TotalSize int64  `json:"totalSize"`
		}{st.Hash, st.Revision, st.Entries, st.TotalSize})
	case "table":
		table.Write(g.stdout, table.ForLevel(buildinfo.Level), []string{"HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE"},
			[][]string{{fmt.Sprintf("%x", st.Hash), fmt.Sprint(st.Revision), fmt.Sprint(st.Entries), size}})
	case "fields":
		fmt.Fprintf(g.stdout, "\"Hash\" : %d\n\"Revision\" : %d\n\"Keys\" : %d\n\"Size\" : %d\n", st.Hash, st.Revision, st.Entries, st.TotalSize)
	default:
		fmt.Fprintf(g.stdout, "%x, %d, %d, %s\n", st.Hash, st.Revision, st.Entries, size)
	}
	return nil
}
