package judge

import "fmt"

const (
	// ClusterVersionAboveLevel: a member reported a cluster version above the level it ran as.
	ClusterVersionAboveLevel Check = "cluster-version-above-level"
	// ClusterVersionLowered: a member reported a lower cluster version than before, other than
	// to a downgrade's target after the downgrade was asked for.
	ClusterVersionLowered Check = "cluster-version-lowered"
)

// VersionSample is what a member reported at At (any clock the harness keeps, the same for the
// downgrade window): its cluster version ("" before it knows one) and the level it ran as, as
// major.minor.
type VersionSample struct {
	At             int64
	Cluster, Level string
}

// DowngradeWindow says from when (At's clock) the cluster version may go down, and to what
// (Target, major.minor). The zero window allows no lowering.
type DowngradeWindow struct {
	Target string
	From   int64
}

// ClusterVersions checks what the member called name reported over a run, in order:
// ClusterVersionAboveLevel and ClusterVersionLowered, the first of each.
func ClusterVersions(name string, seen []VersionSample, dg DowngradeWindow) []Finding {
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
		if prev != "" && lessVersion(v.Cluster, prev) && (dg.Target == "" || v.At < dg.From || v.Cluster != dg.Target) {
			add(ClusterVersionLowered, "lowered the cluster version from %s to %s", prev, v.Cluster)
		}
		if lessVersion(v.Level, v.Cluster) {
			add(ClusterVersionAboveLevel, "reported cluster version %s, above its level %s", v.Cluster, v.Level)
		}
		prev = v.Cluster
	}
	return out
}

// lessVersion compares major.minor versions.
func lessVersion(a, b string) bool {
	var am, an, bm, bn int
	fmt.Sscanf(a, "%d.%d", &am, &an)
	fmt.Sscanf(b, "%d.%d", &bm, &bn)
	return am < bm || am == bm && an < bn
}
