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
	if !cluster.Decided() {
		return nil // the peers' handshakes keep binaries within one minor of each other
	}
	if TooOld(bin, cluster, dg) {
		return fmt.Errorf("etcd %s is older than the cluster version %s: run an etcd %s binary, or enable a downgrade to %s first (etcdctl downgrade enable %s)",
			bin, cluster, cluster, bin, bin)
	}
	if bin.Major != cluster.Major || cluster.Next().Less(bin) {
		return fmt.Errorf("etcd %s is more than one minor version newer than the cluster version %s: upgrade one minor version at a time (every member to %s first)",
			bin, cluster, cluster.Next())
	}
	return nil
}

// TooOld reports that a binary at bin may not run in a cluster at version cluster: it is older,
// and no downgrade to exactly it is enabled (the one case upstream lets an older binary run:
// the leader is about to lower the cluster version to it).
func TooOld(bin, cluster Level, dg DowngradeInfo) bool {
	return bin.Less(cluster) && dg.Target() != bin
}

// CheckStart decides whether a binary of version local may start on the data in dataDir, whose
// backend records storage, cluster and dg: never on a newer storage schema, and only where
// CheckRun allows it in that cluster. Where the cluster version was not decided yet, the
// storage version stands for it (the cluster version is never below it).
func CheckStart(local string, storage, cluster Level, dg DowngradeInfo, dataDir string) error {
	bin, err := ParseLevel(local)
	if err != nil {
		return err
	}
	if bin.Less(storage) {
		return fmt.Errorf("the data in %s has storage version %s, newer than this etcd %s: start it with an etcd %s binary, or first run 'etcdutl migrate --data-dir %s --target-version %s' (etcdutl %s)",
			dataDir, storage, local, storage, dataDir, bin, storage)
	}
	if !cluster.Decided() && !cluster.IsZero() {
		cluster = storage
	}
	if err := CheckRun(bin, cluster, dg); err != nil {
		return fmt.Errorf("cannot start on the data in %s: %w", dataDir, err)
	}
	return nil
}

// CheckJoin decides whether a binary at level bin may join a running cluster that reports
// cluster and dg: as CheckRun, and while a downgrade is enabled only at the target level, so a
// member added during the downgrade cannot hold it up (upstream lets a newer binary join).
func CheckJoin(bin, cluster Level, dg DowngradeInfo) error {
	if t := dg.Target(); !t.IsZero() && t.Less(bin) {
		return fmt.Errorf("cannot join the cluster: etcd %s is newer than the downgrade target %s: a downgrade to %s is in progress, so a new member must run an etcd %s binary (or cancel the downgrade first: etcdctl downgrade cancel)",
			bin, t, t, t)
	}
	if err := CheckRun(bin, cluster, dg); err != nil {
		return fmt.Errorf("cannot join the cluster: %w", err)
	}
	return nil
}

// CheckPeer decides whether a peer that announced peerVersion (and the minimum cluster version it
// can run in, "" when it sent none) may exchange raft messages with a member of version local,
// given what that member knows of the cluster. Before the cluster version is decided, the two
// binaries must be at most one minor apart.
func CheckPeer(local string, cluster Level, dg DowngradeInfo, peerVersion, peerMinCluster string) error {
	bin, err := ParseLevel(local)
	if err != nil {
		return err
	}
	pl, err := ParseLevel(peerVersion)
	if err != nil {
		return fmt.Errorf("peer announced an unreadable server version %q", peerVersion)
	}
	if cluster.Decided() {
		if err := CheckRun(pl, cluster, dg); err != nil {
			return fmt.Errorf("peer version %s is incompatible with cluster version %s (local version %s): %w", peerVersion, cluster, local, err)
		}
	} else if pl.Major != bin.Major || bin.Next().Less(pl) || pl.Next().Less(bin) {
		return fmt.Errorf("peer version %s is more than one minor version away from the local version %s", peerVersion, local)
	}
	if peerMinCluster != "" {
		min, err := ParseLevel(peerMinCluster)
		if err != nil {
			return fmt.Errorf("peer announced an unreadable minimum cluster version %q", peerMinCluster)
		}
		if bin.Less(min) {
			return fmt.Errorf("peer version %s needs a cluster version of at least %s, but this member runs %s", peerVersion, min, local)
		}
	}
	return nil
}
