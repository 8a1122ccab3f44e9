package judge

import (
	"fmt"
	"math"
	"sort"
	"time"
)

const (
	// ClusterVersionAboveLevel: a member reported a cluster version above the level it ran as,
	// other than at the target of a downgrade enabled by then.
	ClusterVersionAboveLevel Check = "cluster-version-above-level"
	// ClusterVersionLowered: a member reported a lower cluster version than before, other than
	// to a downgrade's target after the downgrade was asked for.
	ClusterVersionLowered Check = "cluster-version-lowered"
	// StorageVersionAboveLevel: a member's storage version (its bbolt schema) above the level it
	// runs as: a binary serving data newer than itself.
	StorageVersionAboveLevel Check = "storage-version-above-level"
	// StorageVersionAheadOfCluster: a member migrated its storage above the cluster version (an
	// upgrade's migration before the cluster version reached it; a downgrade's target may be
	// below the storage version only until the member migrates down).
	StorageVersionAheadOfCluster Check = "storage-version-ahead-of-cluster"
	// StorageVersionNotFollowing: once the cluster has settled, a member's storage version is not
	// the cluster version (or its own level, when that is lower).
	StorageVersionNotFollowing Check = "storage-version-not-following"
	// ClusterVersionAboveAMember: a member reported a cluster version above the level another
	// member of the cluster ran as then (the cluster version is the lowest member's level, and
	// only a downgrade lowers a member's level).
	ClusterVersionAboveAMember Check = "cluster-version-above-a-member"
)

// VersionSample is what a member reported at At (any clock the harness keeps, the same for the
// downgrade window): its cluster version ("" before it knows one), the level it ran as and its
// storage version ("" where its level keeps none: 3.5), as major.minor. Cluster and Storage
// must be read together (one snapshot of the member's version state).
type VersionSample struct {
	At                      int64
	Cluster, Level, Storage string
}

// DowngradeWindow says from when (At's clock) the cluster version may go down, and to what
// (Target, major.minor): a downgrade enabled then. The zero window allows no lowering.
type DowngradeWindow struct {
	Target string
	From   int64
}

// downgrading reports whether a downgrade to target (a cluster version reported, or a member's
// level) was enabled by at.
func downgrading(windows []DowngradeWindow, at int64, target string) bool {
	for _, w := range windows {
		if w.Target != "" && at >= w.From && target == w.Target {
			return true
		}
	}
	return false
}

// ClusterVersions checks what the member called name reported over a run (with the downgrades
// enabled during it), in order:
// ClusterVersionAboveLevel, ClusterVersionLowered, StorageVersionAboveLevel and
// StorageVersionAheadOfCluster, the first of each.
func ClusterVersions(name string, seen []VersionSample, windows []DowngradeWindow) []Finding {
	var out []Finding
	fired := map[Check]bool{}
	add := func(c Check, format string, a ...any) {
		if !fired[c] {
			fired[c] = true
			out = append(out, Finding{c, name + " " + fmt.Sprintf(format, a...)})
		}
	}
	prev := ""
	for _, v := range seen {
		if v.Cluster == "" {
			continue
		}
		if prev != "" && lessVersion(v.Cluster, prev) && !downgrading(windows, v.At, v.Cluster) {
			add(ClusterVersionLowered, "lowered the cluster version from %s to %s", prev, v.Cluster)
		}
		// A member at a downgrade's target may see the cluster version above it until the
		// leader lowers it (it joined, or restarted, in between): upstream's rule too.
		if lessVersion(v.Level, v.Cluster) && !downgrading(windows, v.At, v.Level) {
			add(ClusterVersionAboveLevel, "reported cluster version %s, above its level %s", v.Cluster, v.Level)
		}
		prev = v.Cluster
		if v.Storage == "" {
			continue
		}
		if lessVersion(v.Level, v.Storage) {
			add(StorageVersionAboveLevel, "holds storage version %s, above its level %s", v.Storage, v.Level)
		}
		if lessVersion(v.Cluster, v.Storage) && !downgrading(windows, v.At, v.Cluster) {
			add(StorageVersionAheadOfCluster, "holds storage version %s, above cluster version %s", v.Storage, v.Cluster)
		}
	}
	return out
}

// ClusterVersionsAcross checks the members' reports against each other: a cluster version C
// that one member reported at t, and a level L below C that another reported at t2 >= t, are
// a cluster version above a member (ClusterVersionAboveAMember): outside a downgrade a member's
// level only rises, so at t it was at most L. A downgrade asked for by t2 swaps levels down, so
// from the first window on nothing is judged. seen is every member's samples by name; the
// first finding only.
func ClusterVersionsAcross(seen map[string][]VersionSample, windows []DowngradeWindow) []Finding {
	type report struct {
		VersionSample
		name string
	}
	var all []report
	for name, samples := range seen {
		for _, v := range samples {
			all = append(all, report{v, name})
		}
	}
	// By time; at one instant a level is judged before the cluster versions of that instant.
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].At != all[j].At {
			return all[i].At < all[j].At
		}
		return all[i].name < all[j].name
	})
	downgradeFrom := int64(math.MaxInt64)
	for _, w := range windows {
		if w.Target != "" && w.From < downgradeFrom {
			downgradeFrom = w.From
		}
	}
	var top report // the highest cluster version reported so far
	for _, r := range all {
		if r.At >= downgradeFrom {
			break
		}
		if top.Cluster != "" && r.name != top.name && lessVersion(r.Level, top.Cluster) {
			return []Finding{{ClusterVersionAboveAMember, fmt.Sprintf("%s reported cluster version %s while %s ran as %s (reported %v later)",
				top.name, top.Cluster, r.name, r.Level, time.Duration(r.At-top.At))}}
		}
		if r.Cluster != "" && (top.Cluster == "" || lessVersion(top.Cluster, r.Cluster)) {
			top = r
		}
	}
	return nil
}

// StorageSettled checks a member's versions once the cluster has settled (every member applied
// the same revision): its storage version is the cluster version, or its level where that is
// lower, and never below 3.5 (StorageVersionNotFollowing). Members whose level keeps no storage
// version, and members that know no cluster version, have nothing to check.
func StorageSettled(name string, v VersionSample) []Finding {
	if v.Storage == "" || v.Cluster == "" {
		return nil
	}
	want := v.Cluster
	if lessVersion(v.Level, want) {
		want = v.Level
	}
	if lessVersion(want, "3.5") {
		want = "3.5"
	}
	if v.Storage != want {
		return []Finding{{StorageVersionNotFollowing, fmt.Sprintf("%s holds storage version %s where cluster version %s and its level %s want %s", name, v.Storage, v.Cluster, v.Level, want)}}
	}
	return nil
}

// lessVersion compares major.minor versions.
func lessVersion(a, b string) bool {
	var am, an, bm, bn int
	fmt.Sscanf(a, "%d.%d", &am, &an)
	fmt.Sscanf(b, "%d.%d", &bm, &bn)
	return am < bm || am == bm && an < bn
}
