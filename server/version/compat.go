package version

import "fmt"

// DowngradeInfo is the replicated downgrade state, stored as upstream stores it (JSON in the
// cluster bucket under "downgrade").
type DowngradeInfo struct {
	TargetVersion string `json:"target-version"`
	Enabled       bool   `json:"enabled"`
}

// Target is the level being downgraded to (zero when no downgrade is enabled).
func (d DowngradeInfo) Target() Level {
	if !d.Enabled {
		return Level{}
	}
	l, err := ParseLevel(d.TargetVersion)
	if err != nil {
		return Level{}
	}
	return l
}

// CheckRun decides whether a binary at level bin may run in a cluster whose version is cluster:
// start on existing data, join, or be accepted as a peer. An older binary is allowed only when a
// downgrade to exactly its level is enabled; a binary more than one minor newer is never allowed.
func CheckRun(bin, cluster Level, dg DowngradeInfo) error {
	if cluster.IsZero() {
		return nil
	}
	if bin.Less(cluster) {
		if dg.Target() == bin {
			return nil
		}
		return fmt.Errorf("etcd %s is older than the cluster version %s: run an etcd %s binary, or enable a downgrade to %s first (etcdctl downgrade enable %s)",
			bin, cluster, cluster, bin, bin)
	}
	if bin.Major != cluster.Major || cluster.Next().Less(bin) {
		return fmt.Errorf("etcd %s is more than one minor version newer than the cluster version %s: upgrade one minor version at a time (every member to %s first)",
			bin, cluster, cluster.Next())
	}
	return nil
}

// CheckPeer decides whether a peer that announced serverVersion may exchange raft messages with
// this member, given what this member knows of the cluster. Before the cluster version is decided,
// the two binaries must be at most one minor apart.
func CheckPeer(local, cluster Level, dg DowngradeInfo, serverVersion string) error {
	pl, err := ParseLevel(serverVersion)
	if err != nil {
		return fmt.Errorf("peer announced an unreadable server version %q", serverVersion)
	}
	if !cluster.IsZero() {
		if err := CheckRun(pl, cluster, dg); err != nil {
			return fmt.Errorf("peer version %s is incompatible with cluster version %s (local version %s): %w", serverVersion, cluster, Version, err)
		}
		return nil
	}
	if pl.Major != local.Major || local.Next().Less(pl) || pl.Next().Less(local) {
		return fmt.Errorf("peer version %s is more than one minor version away from the local version %s", serverVersion, Version)
	}
	return nil
}
