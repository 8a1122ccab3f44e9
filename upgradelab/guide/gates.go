package guide

import (
	"fmt"
	"sort"
	"strings"

	"etcdx/upgradelab/assess"
	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/releases"
)

// leaderOf is the member that reports itself leader (nil: none answered as leader).
func leaderOf(f assess.Facts) *assess.Member {
	for i := range f.Members {
		if l := f.Members[i].Live; l != nil && l.Leader {
			return &f.Members[i]
		}
	}
	return nil
}

func memberNamed(f assess.Facts, name string) *assess.Member {
	for i := range f.Members {
		if f.Members[i].Name == name {
			return &f.Members[i]
		}
	}
	return nil
}

// memberBack says why the member is not yet back as the step wants it ("" when it is): running
// version want, answering without errors, within maxLag applied entries of the leader, and no
// alarm raised in the cluster.
func memberBack(f assess.Facts, name, want string, maxLag uint64) string {
	m := memberNamed(f, name)
	switch {
	case m == nil:
		return name + " is not in the member list"
	case m.Live == nil:
		return name + " does not answer"
	case m.Live.Version != want:
		return fmt.Sprintf("%s runs %s, not %s", name, m.Live.Version, want)
	case len(m.Live.Errors) > 0:
		return fmt.Sprintf("%s reports %s", name, strings.Join(m.Live.Errors, "; "))
	}
	if len(f.Alarms) > 0 {
		var as []string
		for _, a := range f.Alarms {
			as = append(as, a.Type+" on "+a.Member)
		}
		return "alarm raised: " + strings.Join(as, ", ")
	}
	l := leaderOf(f)
	if l == nil {
		return "no member answers as the leader"
	}
	if lag := int64(l.Live.AppliedIndex) - int64(m.Live.AppliedIndex); lag > int64(maxLag) {
		return fmt.Sprintf("%s is %d entries behind the leader %s (the bound is %d)", name, lag, l.Name, maxLag)
	}
	return ""
}

// nextToSwap is the next member not yet running want: followers first, by name, the leader
// last ("" when every member runs it).
func nextToSwap(f assess.Facts, want string) (name string, leader bool) {
	var followers, leaders []string
	for _, m := range f.Members {
		if !m.Listed || m.Live != nil && m.Live.Version == want {
			continue
		}
		if m.Live != nil && m.Live.Leader {
			leaders = append(leaders, m.Name)
		} else {
			followers = append(followers, m.Name)
		}
	}
	sort.Strings(followers)
	if len(followers) > 0 {
		return followers[0], false
	}
	if len(leaders) > 0 {
		return leaders[0], true
	}
	return "", false
}

// transferee is the voter leadership should move to from the leader: one already at want if
// any, the first by name ("" when no other voter answers).
func transferee(f assess.Facts, leader, want string) string {
	var atWant, others []string
	for _, m := range f.Members {
		switch {
		case m.Name == leader || m.Learner || m.Live == nil || len(m.Live.Errors) > 0:
		case m.Live.Version == want:
			atWant = append(atWant, m.Name)
		default:
			others = append(others, m.Name)
		}
	}
	sort.Strings(atWant)
	sort.Strings(others)
	if all := append(atWant, others...); len(all) > 0 {
		return all[0]
	}
	return ""
}

// storageMinor is the minor of a storage version as a member reports it; none means 3.5 (a
// 3.5 member records none).
func storageMinor(sv string) string {
	if sv == "" {
		return "3.5"
	}
	v, err := releases.ParseVersion(sv)
	if err != nil {
		return sv
	}
	return releases.MinorOf(v)
}

// clusterAt says why the cluster is not yet at minor ("" when it is): its cluster version, and
// every answering member's storage version.
func clusterAt(f assess.Facts, minor string) string {
	cv := "none"
	if f.ClusterVersion != "" {
		if v, err := releases.ParseVersion(f.ClusterVersion); err == nil {
			cv = releases.MinorOf(v)
		}
	}
	if cv != minor {
		return fmt.Sprintf("the cluster version is %s, not %s", cv, minor)
	}
	for _, m := range f.Members {
		if m.Live != nil && storageMinor(m.Live.StorageVersion) != minor {
			return fmt.Sprintf("%s's storage version is %s, not %s", m.Name, storageMinor(m.Live.StorageVersion), minor)
		}
	}
	return ""
}

// downgradeDone says why a downgrade to want is not complete ("" when it is): every member
// runs want, the cluster and storage versions are at its minor, and no member still reports
// the downgrade enabled. Upstream gives no such signal (etcd-io/etcd#19439).
func downgradeDone(f assess.Facts, want string) string {
	v, err := releases.ParseVersion(want)
	if err != nil {
		return err.Error()
	}
	for _, m := range f.Members {
		if !m.Listed {
			continue
		}
		if m.Live == nil {
			return m.Name + " does not answer"
		}
		if m.Live.Version != want {
			return fmt.Sprintf("%s runs %s, not %s", m.Name, m.Live.Version, want)
		}
	}
	if why := clusterAt(f, releases.MinorOf(v)); why != "" {
		return why
	}
	if f.Downgrade != nil {
		return "the downgrade to " + f.Downgrade.Target + " is still enabled"
	}
	return ""
}

// snapshotMarks is each answering member's metrics, to tell later whether it saved a snapshot
// since; why is set when a member does not serve them.
func snapshotMarks(f assess.Facts) (marks map[string]cluster.Metrics, why string) {
	marks = map[string]cluster.Metrics{}
	for _, m := range f.Members {
		switch {
		case !m.Listed:
		case m.Live == nil:
			return nil, m.Name + " does not answer"
		case m.Live.Metrics == nil || m.Live.Metrics.SnapshotsSaved < 0:
			return nil, m.Name + " serves no etcd_debugging_snap_save_total_duration_seconds on /metrics"
		default:
			marks[m.Name] = *m.Live.Metrics
		}
	}
	return marks, ""
}

// snapshotsSince says which members have not saved a snapshot since marks ("" when every
// marked member has).
func snapshotsSince(f assess.Facts, marks map[string]cluster.Metrics) string {
	var waiting []string
	for name, before := range marks {
		m := memberNamed(f, name)
		if m == nil || m.Live == nil || m.Live.Metrics == nil || !m.Live.Metrics.SavedSnapshotSince(before) {
			waiting = append(waiting, name)
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	sort.Strings(waiting)
	return "no snapshot saved yet by " + strings.Join(waiting, ", ")
}
