package version

// StorageTarget is the storage version a binary at level bin keeps its backend at in a cluster at
// version cluster: the cluster version, never above the binary, never below 3.5. It reports false
// when the storage must stay as it is: a binary without storage versions, or a cluster version
// not decided yet.
func StorageTarget(bin, cluster Level) (Level, bool) {
	if !StorageVersion.Built(bin) || cluster.IsZero() {
		return Level{}, false
	}
	want := cluster
	if bin.Less(want) {
		want = bin
	}
	if want.Less(V3_5) {
		want = V3_5
	}
	return want, true
}

// ReadyToDowngrade reports that a member whose storage is at storage may have its binary swapped
// for the downgrade target: the downgrade is enabled and the cluster and storage versions have
// both reached the target.
func ReadyToDowngrade(cluster, storage Level, dg DowngradeInfo) bool {
	return dg.Enabled && dg.Target() == cluster && storage == cluster
}
