package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dustin/go-humanize"

	"etcdx/etcdutl/offline"
	"etcdx/pkg/buildinfo"
	"etcdx/pkg/table"
	"etcdx/server/membership"
)

func restore(args []string, stdout io.Writer) error {
	fs := newFlags("snapshot restore")
	dataDir := fs.String("data-dir", "", "Path to the output data directory (default <name>.etcd)")
	name := fs.String("name", membership.DefaultName, "Human-readable name for this member")
	initialCluster := fs.String("initial-cluster", "", "Initial cluster configuration for restore bootstrap (default <name>=<initial-advertise-peer-urls>)")
	token := fs.String("initial-cluster-token", membership.DefaultToken, "Initial cluster token for the etcd cluster during restore bootstrap")
	peerURLs := fs.StringSlice("initial-advertise-peer-urls", []string{membership.DefaultPeerURL}, "List of this member's peer URLs to advertise to the rest of the cluster")
	skipHash := fs.Bool("skip-hash-check", false, "Ignore snapshot integrity hash value (required if copied from data directory)")
	bump := fs.Int64("bump-revision", 0, "How much to increase the latest revision after restore")
	markCompacted := fs.Bool("mark-compacted", false, "Mark the latest revision after restore as the point of scheduled compaction (required if --bump-revision > 0)")
	file, err := oneFile(fs, args, "snapshot restore")
	if err != nil {
		return err
	}
	if *bump < 0 {
		return badArgs("--bump-revision must not be negative")
	}
	if *bump > 0 && !*markCompacted {
		return badArgs("--mark-compacted is required if --bump-revision > 0")
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
	cluster, err := membership.ParseInitialCluster(ic)
	if err != nil {
		return usageError("--initial-cluster: %v", err)
	}
	if err := offline.Restore(offline.RestoreConfig{SnapshotPath: file, DataDir: dir, Name: *name, PeerURLs: *peerURLs,
		InitialCluster: cluster, InitialClusterToken: *token, SkipHashCheck: *skipHash,
		BumpRevision: *bump, MarkCompacted: *markCompacted}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored snapshot %s into %s (member %s)\n", file, dir, *name)
	return nil
}

func status(args []string, stdout io.Writer) error {
	fs := newFlags("snapshot status")
	format := outputFormat(fs)
	file, err := oneFile(fs, args, "snapshot status")
	if err != nil {
		return err
	}
	f, err := format()
	if err != nil {
		return err
	}
	st, err := offline.GetStatus(file)
	if err != nil {
		return err
	}
	size := humanize.Bytes(uint64(st.TotalSize))
	switch f {
	case "json":
		return json.NewEncoder(stdout).Encode(st)
	case "table":
		table.Write(stdout, table.ForLevel(buildinfo.Level), []string{"HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE", "VERSION"},
			[][]string{{fmt.Sprintf("%x", st.Hash), fmt.Sprint(st.Revision), fmt.Sprint(st.TotalKey), size, st.Version}})
	default:
		fmt.Fprintf(stdout, "%x, %d, %d, %s, %s\n", st.Hash, st.Revision, st.TotalKey, size, st.Version)
	}
	return nil
}
