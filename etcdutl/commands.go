package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/dustin/go-humanize"

	"etcdx/etcdutl/offline"
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
	if *dataDir == "" || *target == "" {
		return usageError{fmt.Errorf("migrate needs --data-dir and --target-version")}
	}
	to, err := version.ParseLevel(*target)
	if err != nil {
		return usageError{fmt.Errorf("--target-version: %w", err)}
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
	if *dataDir == "" || *backupDir == "" {
		return usageError{fmt.Errorf("backup needs --data-dir and --backup-dir")}
	}
	res, err := offline.Backup(*dataDir, *backupDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s: database %s, %d WAL segments, %d snapshot files\n",
		*dataDir, *backupDir, humanize.Bytes(uint64(res.DBBytes)), res.WALFiles, res.SnapFiles)
	return nil
}

func defrag(args []string, stdout io.Writer) error {
	fs := newFlags("defrag")
	dataDir := fs.String("data-dir", "", "Path to the etcd data dir")
	if err := parseNoArgs(fs, args, 0); err != nil {
		return err
	}
	if *dataDir == "" {
		return usageError{fmt.Errorf("defrag needs --data-dir")}
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
		return usageError{fmt.Errorf("--rev must not be negative")}
	}
	res, err := offline.HashKV(file, *rev)
	if err != nil {
		return err
	}
	switch f {
	case "json":
		return json.NewEncoder(stdout).Encode(res)
	case "table":
		table.Write(stdout, []string{"HASH", "HASH REVISION", "COMPACT REVISION"},
			[][]string{{fmt.Sprint(res.Hash), fmt.Sprint(res.HashRevision), fmt.Sprint(res.CompactRevision)}})
	default:
		fmt.Fprintf(stdout, "%d, %d, %d\n", res.Hash, res.HashRevision, res.CompactRevision)
	}
	return nil
}
