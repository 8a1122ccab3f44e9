package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"

	"etcdx/etcdutl/offline"
	"etcdx/pkg/buildinfo"
	"etcdx/pkg/table"
	"etcdx/server/version"
)

func migrate(args []string, stdout io.Writer) error {
	fs := newFlags("migrate")
	dataDir := fs.String("data-dir", "", "Path to the etcd data dir")
	target := fs.String("target-version", "", `Target etcd version to migrate contents of data dir. Minimal value 3.5. Format "X.Y" for example 3.6.`)
	force := fs.Bool("force", false, "Ignore migration failure and forcefully override storage version. Not recommended.")
	if err := parseNoArgs(fs, args, 0); err != nil {
		return err
	}
	if err := required(map[string]string{"data-dir": *dataDir, "target-version": *target}); err != nil {
		return err
	}
	to, err := migrateTarget(*target)
	if err != nil {
		return err
	}
	res, err := offline.Migrate(*dataDir, to, *force)
	if err != nil {
		return err
	}
	for _, f := range res.Forced {
		fmt.Fprintf(stdout, "forced past: %s\n", f)
	}
	if res.From == res.To {
		fmt.Fprintf(stdout, "storage version of %s is already %s; nothing to do\n", *dataDir, res.To)
	} else {
		fmt.Fprintf(stdout, "migrated storage version of %s from %s to %s\n", *dataDir, res.From, res.To)
	}
	for _, a := range res.Actions {
		fmt.Fprintf(stdout, "  %s\n", a)
	}
	if !res.ClusterTo.IsZero() {
		fmt.Fprintf(stdout, "lowered the cluster version recorded in the data from %s to %s\n", res.ClusterFrom, res.ClusterTo)
	}
	return nil
}

func backup(args []string, stdout io.Writer) error {
	fs := newFlags("backup")
	dataDir := fs.String("data-dir", "", "Path to the etcd data dir")
	backupDir := fs.String("backup-dir", "", "Path to the backup dir")
	if err := parseNoArgs(fs, args, 0); err != nil {
		return err
	}
	if err := required(map[string]string{"data-dir": *dataDir, "backup-dir": *backupDir}); err != nil {
		return err
	}
	res, err := offline.Backup(*dataDir, *backupDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s: database %s, %d WAL segments, %d snapshot files\n",
		*dataDir, *backupDir, humanize.Bytes(uint64(res.DBBytes)), res.WALFiles, res.SnapFiles)
	return nil
}

// check prints what offline.Check found, problems first, and fails (exit 1) when there are any.
func check(args []string, stdout io.Writer) error {
	fs := newFlags("check")
	dataDir := fs.String("data-dir", "", "Path to the etcd data dir")
	format := outputFormat(fs)
	if err := parseNoArgs(fs, args, 0); err != nil {
		return err
	}
	if err := required(map[string]string{"data-dir": *dataDir}); err != nil {
		return err
	}
	f, err := format()
	if err != nil {
		return err
	}
	if f == "table" {
		return &exitErr{code: exitBadFeature, err: fmt.Errorf("table is not supported as output format")}
	}
	r, err := offline.Check(*dataDir)
	if err != nil {
		return err
	}
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
		return fmt.Errorf("%d problems found in %s", len(r.Problems), *dataDir)
	}
	if f != "json" {
		fmt.Fprintf(stdout, "no problems found in %s\n", *dataDir)
	}
	return nil
}

func defrag(args []string, stdout io.Writer) error {
	fs := newFlags("defrag")
	dataDir := fs.String("data-dir", "", "Path to the etcd data dir")
	if err := parseNoArgs(fs, args, 0); err != nil {
		return err
	}
	if err := required(map[string]string{"data-dir": *dataDir}); err != nil {
		return err
	}
	res, err := offline.Defrag(*dataDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Finished defragmenting etcd data[%s] (%s -> %s)\n", *dataDir,
		humanize.Bytes(uint64(res.Before)), humanize.Bytes(uint64(res.After)))
	return nil
}

func hashkv(args []string, stdout io.Writer) error {
	fs := newFlags("hashkv")
	rev := fs.Int64("rev", 0, "maximum revision to hash (default: latest revision)")
	format := outputFormat(fs)
	file, err := oneFile(fs, args, "hashkv")
	if err != nil {
		return err
	}
	f, err := format()
	if err != nil {
		return err
	}
	if *rev < 0 {
		return usageError("--rev must not be negative")
	}
	res, err := offline.HashKV(file, *rev)
	if err != nil {
		return err
	}
	switch f {
	case "json":
		return json.NewEncoder(stdout).Encode(res)
	case "table":
		table.Write(stdout, table.ForLevel(buildinfo.Level), []string{"HASH", "HASH REVISION", "COMPACT REVISION"},
			[][]string{{fmt.Sprint(res.Hash), fmt.Sprint(res.HashRevision), fmt.Sprint(res.CompactRevision)}})
	default:
		fmt.Fprintf(stdout, "%d, %d, %d\n", res.Hash, res.HashRevision, res.CompactRevision)
	}
	return nil
}

// required refuses flags given no value, naming them in order as cobra does.
func required(flags map[string]string) error {
	var missing []string
	for name, v := range flags {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return requiredFlags(missing...)
}

// migrateTarget reads --target-version as upstream does: "X.Y", at least 3.5, else 128.
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
