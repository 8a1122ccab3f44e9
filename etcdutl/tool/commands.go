package tool

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"etcdx/etcdutl/offline"
	"etcdx/pkg/buildinfo"
	"etcdx/pkg/table"
	"etcdx/server/version"
)

func migrateCommand(g *globals) *cobra.Command {
	var dataDir, target string
	var force bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Migrates schema of etcd data dir files to make them compatible with different etcd version",
		RunE: runs(func(*cobra.Command, []string) error {
			to, err := migrateTarget(target)
			if err != nil {
				return err
			}
			res, err := offline.Migrate(dataDir, to, force, g.lockTimeout)
			if err != nil {
				return err
			}
			// As upstream, nothing on standard output: its events go to the log, with ours
			// (what each step did, what --force let through) beside them.
			log := g.log()
			for _, f := range res.Forced {
				log.Warn("forced past a WAL entry the target version cannot apply", "entry", f)
			}
			if res.From == res.To {
				log.Info("storage version up-to-date", "storage-version", res.To.String())
			}
			if res.NoPlan != nil {
				// upstream's two events for a forced migration
				log.Info("normal migrate failed, trying with force", "error", res.NoPlan.Error())
				if res.To.Less(version.V3_6) {
					log.Warn("forcefully cleared storage version")
				} else {
					log.Warn("forcefully set storage version", "storage-version", res.To.String())
				}
				return nil
			}
			for _, step := range migrationSteps(res.From, res.To) {
				log.Info("updated storage version", "new-storage-version", step.Full())
			}
			for _, a := range res.Actions {
				log.Info("migration step", "action", a)
			}
			if !res.ClusterTo.IsZero() {
				log.Info("lowered the cluster version recorded in the data", "from", res.ClusterFrom.String(), "to", res.ClusterTo.String())
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "Path to the etcd data dir")
	cmd.Flags().StringVar(&target, "target-version", "", `Target etcd version to migrate contents of data dir. Minimal value 3.5. Format "X.Y" for example 3.6.`)
	cmd.Flags().BoolVar(&force, "force", false, "Ignore migration failure and forcefully override storage version. Not recommended.")
	requireFlags(cmd, "data-dir", "target-version")
	return cmd
}

// backupCommand is upstream 3.5's legacy backup (gone from 3.6), by its flags; ours makes a
// consistent copy of the stopped member's files (upstream 3.5's rewrote the WAL for a new
// cluster); at 3.5 --with-v3=false leaves the v3 data out, as upstream's (refused from 3.6, which
// has no v2 store to keep).
func backupCommand(g *globals) *cobra.Command {
	var cfg offline.BackupConfig
	withV3 := true
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Consistent copy of a stopped member's data directory",
		Args:  cobra.NoArgs,
		RunE: runs(func(*cobra.Command, []string) error {
			if !withV3 && buildinfo.AtLeast("3.6") {
				return badArgs("--with-v3=false would leave the v3 database out and keep only the v2 store, which etcd 3.6 and later do not have: keep --with-v3")
			}
			cfg.V2Only = !withV3
			res, err := offline.Backup(cfg)
			if err != nil {
				return err
			}
			// On standard error, as a log line: upstream's backup writes nothing to standard output.
			g.log().Info("backed up the data directory", "data-dir", cfg.DataDir, "backup-dir", cfg.BackupDir,
				"db-size", humanize.Bytes(uint64(res.DBBytes)), "wal-files", res.WALFiles, "snap-files", res.SnapFiles)
			return nil
		}),
	}
	if !buildinfo.AtLeast("3.6") {
		cmd.Short, cmd.Long = "[legacy] offline backup of etcd directory", "Prefer: `etcdctl snapshot save` instead."
	}
	cmd.Flags().StringVar(&cfg.DataDir, "data-dir", "", "Path to the etcd data dir")
	cmd.Flags().StringVar(&cfg.WALDir, "wal-dir", "", "Path to the etcd wal dir")
	cmd.Flags().StringVar(&cfg.BackupDir, "backup-dir", "", "Path to the backup dir")
	cmd.Flags().StringVar(&cfg.BackupWALDir, "backup-wal-dir", "", "Path to the backup wal dir")
	cmd.Flags().BoolVar(&withV3, "with-v3", true, "Backup v3 backend data")
	requireFlags(cmd, "data-dir", "backup-dir")
	return hiddenAbove(cmd, "3.6")
}

// checkCommand is ours with --data-dir (a read-only walk of a stopped member's WAL, snapshots and
// database), and upstream 3.5's "check v2store".
func checkCommand(g *globals) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "commands for checking properties",
		Args:  cobra.NoArgs,
		RunE: runs(func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				return usageError("required flag(s) \"data-dir\" not set")
			}
			return checkDataDir(g, dataDir)
		}),
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "Path to the etcd data dir")
	if !buildinfo.AtLeast("3.6") {
		_ = cmd.Flags().MarkHidden("data-dir") // 3.5's check has v2store alone: show its help
	}
	cmd.AddCommand(checkV2StoreCommand(g))
	return hiddenAbove(cmd, "3.6")
}

func checkV2StoreCommand(g *globals) *cobra.Command {
	var dataDir, walDir string
	cmd := &cobra.Command{
		Use:   "v2store",
		Short: "Check custom content in v2store",
		RunE: runs(func(*cobra.Command, []string) error {
			found, err := offline.CheckV2Store(dataDir, walDir)
			if err != nil {
				return err
			}
			if err := found.Err(); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, "No custom content found in both v2store and WAL records.")
			return nil
		}),
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "Required. A data directory not in use by etcd.")
	cmd.Flags().StringVar(&walDir, "wal-dir", "", "Optional. A dedicated WAL directory.")
	requireFlags(cmd, "data-dir")
	return cmd
}

func checkDataDir(g *globals, dataDir string) error {
	f, err := g.outputFormat()
	if err != nil {
		return err
	}
	if f == "table" || f == "fields" {
		return &exitErr{code: exitBadFeature, err: fmt.Errorf("%s is not supported as output format", f)}
	}
	r, err := offline.Check(dataDir)
	if err != nil {
		return err
	}
	stdout := g.stdout
	if f == "json" {
		if err := json.NewEncoder(stdout).Encode(r); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "wal: %d segments, entries %d to %d, commit index %d, term %d\n",
			r.WALSegments, r.WALFirstIndex, r.WALLastIndex, r.CommitIndex, r.Term)
		fmt.Fprintf(stdout, "snap: %d files, newest recorded at index %d\n", r.SnapshotFiles, r.SnapshotIndex)
		fmt.Fprintf(stdout, "db: consistent index %d (term %d), %d revisions up to %d, compacted at %d, storage version %s\n",
			r.ConsistentIndex, r.ConsistentTerm, r.Revisions, r.Revision, r.CompactRevision, r.StorageVersion)
		for _, p := range r.Problems {
			fmt.Fprintf(stdout, "problem: %s\n", p)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(stdout, "note: %s\n", n)
		}
	}
	if len(r.Problems) > 0 {
		return fmt.Errorf("%d problems found in %s", len(r.Problems), dataDir)
	}
	if f != "json" {
		fmt.Fprintf(stdout, "no problems found in %s\n", dataDir)
	}
	return nil
}

func defragCommand(g *globals) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "defrag",
		Short: "Defragments the storage of the etcd",
		RunE: runs(func(*cobra.Command, []string) error {
			// As upstream, nothing on standard output; the log has the sizes before and after.
			_, err := offline.Defrag(dataDir, g.lockTimeout, g.log())
			return err
		}),
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "Required. Defragments a data directory not in use by etcd.")
	requireFlags(cmd, "data-dir")
	return cmd
}

func hashkvCommand(g *globals) *cobra.Command {
	var rev int64
	cmd := &cobra.Command{
		Use:   "hashkv <filename>",
		Short: "Prints the KV history hash of a given file",
		Args:  cobra.ExactArgs(1),
		RunE: runs(func(_ *cobra.Command, args []string) error {
			f, err := g.outputFormat()
			if err != nil {
				return err
			}
			if rev < 0 {
				return usageError("--rev must not be negative")
			}
			res, err := offline.HashKV(args[0], rev, g.lockTimeout)
			if err != nil {
				return err
			}
			switch f {
			case "json":
				return json.NewEncoder(g.stdout).Encode(res)
			case "table":
				table.Write(g.stdout, table.ForLevel(buildinfo.Level), []string{"HASH", "HASH REVISION", "COMPACT REVISION"},
					[][]string{{fmt.Sprint(res.Hash), fmt.Sprint(res.HashRevision), fmt.Sprint(res.CompactRevision)}})
			case "fields":
				fmt.Fprintf(g.stdout, "\"Hash\" : %d\n\"Hash revision\" : %d\n\"Compact revision\" : %d\n", res.Hash, res.HashRevision, res.CompactRevision)
			default:
				fmt.Fprintf(g.stdout, "%d, %d, %d\n", res.Hash, res.HashRevision, res.CompactRevision)
			}
			return nil
		}),
	}
	cmd.Flags().Int64Var(&rev, "rev", 0, "maximum revision to hash (default: latest revision)")
	return cmd
}

func migrateTarget(s string) (version.Level, error) {
	if strings.Count(s, ".") != 1 {
		return version.Level{}, badArgs(`wrong target version format, expected "X.Y", got %q`, s)
	}
	l, err := version.ParseLevel(s)
	if err != nil {
		major, minor, _ := strings.Cut(s, ".")
		for _, part := range []string{major, minor} {
			if _, perr := strconv.ParseInt(part, 10, 64); perr != nil {
				return version.Level{}, badArgs("failed to parse target version: %v", perr)
			}
		}
		return version.Level{}, badArgs("failed to parse target version: %v", err)
	}
	if l.Less(version.V3_5) {
		return version.Level{}, badArgs(`target version %q not supported. Minimal "3.5"`, l.String())
	}
	return l, nil
}

// migrationSteps are the storage versions a migration from one level to another passes through,
// one level at a time, the target last (none when they are equal).
func migrationSteps(from, to version.Level) []version.Level {
	var steps []version.Level
	if from.Major != to.Major {
		return nil
	}
	for l := from; l != to; {
		if l.Less(to) {
			l = l.Next()
		} else {
			l = l.Prev()
		}
		steps = append(steps, l)
	}
	return steps
}
