package guide

import (
	"strings"
	"testing"

	"etcdx/upgradelab/assess"
	"etcdx/upgradelab/cluster"
)

// facts is a listed member per "name version applied" triple, the first leading.
func facts(members ...string) assess.Facts {
	var f assess.Facts
	for i, m := range members {
		var name, version string
		var applied uint64
		parts := strings.Fields(m)
		name, version = parts[0], parts[1]
		if len(parts) > 2 {
			for _, c := range parts[2] {
				applied = applied*10 + uint64(c-'0')
			}
		}
		mem := assess.Member{Name: name, ID: name + "id", Listed: true}
		if version != "-" {
			mem.Live = &assess.Live{Endpoint: name + ":2379", Version: version, AppliedIndex: applied, Leader: i == 0, StorageVersion: "3.6.0"}
		}
		f.Members = append(f.Members, mem)
	}
	f.ClusterVersion = "3.6.0"
	return f
}

func TestMemberBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		facts assess.Facts
		want  string // "" passes; else a part of the reason
	}{
		{"back and caught up", facts("m1 3.6.16 5000", "m2 3.7.3 4990"), ""},
		{"still down", facts("m1 3.6.16 5000", "m2 -"), "m2 does not answer"},
		{"old binary", facts("m1 3.6.16 5000", "m2 3.6.16 5000"), "m2 runs 3.6.16, not 3.7.3"},
		{"behind the leader", facts("m1 3.6.16 5000", "m2 3.7.3 3000"), "m2 is 2000 entries behind the leader m1"},
		{"no leader", func() assess.Facts {
			f := facts("m1 3.6.16 5000", "m2 3.7.3 5000")
			f.Members[0].Live.Leader = false
			return f
		}(), "no member answers as the leader"},
		{"an alarm", func() assess.Facts {
			f := facts("m1 3.6.16 5000", "m2 3.7.3 5000")
			f.Alarms = []assess.Alarm{{Member: "m1id", Type: "NOSPACE"}}
			return f
		}(), "alarm raised: NOSPACE on m1id"},
		{"errors reported", func() assess.Facts {
			f := facts("m1 3.6.16 5000", "m2 3.7.3 5000")
			f.Members[1].Live.Errors = []string{"etcdserver: no leader"}
			return f
		}(), "m2 reports etcdserver: no leader"},
		{"gone from the list", facts("m1 3.6.16 5000"), "m2 is not in the member list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := memberBack(tc.facts, "m2", "3.7.3", 1000)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("memberBack = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNextToSwapLeavesTheLeaderLast(t *testing.T) {
	for _, tc := range []struct {
		facts      assess.Facts
		name       string
		leader     bool
		transferTo string
	}{
		{facts("m2 3.6.16", "m3 3.6.16", "m1 3.6.16"), "m1", false, ""},
		{facts("m2 3.6.16", "m3 3.7.3", "m1 3.7.3"), "m2", true, "m1"},
		{facts("m2 3.7.3", "m3 3.7.3", "m1 3.7.3"), "", false, ""},
		{facts("m1 3.6.16", "m2 -", "m3 3.7.3"), "m2", false, ""}, // a member down is still to be swapped
	} {
		name, leader := nextToSwap(tc.facts, "3.7.3")
		if name != tc.name || leader != tc.leader {
			t.Errorf("nextToSwap = %q (leader %v), want %q (leader %v)", name, leader, tc.name, tc.leader)
		}
		if tc.leader {
			if to := transferee(tc.facts, name, "3.7.3"); to != tc.transferTo {
				t.Errorf("transferee = %q, want %q (a voter already at the new version)", to, tc.transferTo)
			}
		}
	}
}

func TestClusterAtAndDowngradeDone(t *testing.T) {
	f := facts("m1 3.6.16", "m2 3.6.16")
	if why := clusterAt(f, "3.6"); why != "" {
		t.Errorf("clusterAt 3.6: %s", why)
	}
	if why := clusterAt(f, "3.7"); !strings.Contains(why, "cluster version is 3.6, not 3.7") {
		t.Errorf("clusterAt 3.7: %q", why)
	}
	f.Members[1].Live.StorageVersion = ""
	if why := clusterAt(f, "3.6"); !strings.Contains(why, "m2's storage version is 3.5") {
		t.Errorf("a member reporting no storage version is at 3.5: %q", why)
	}
	f.Members[1].Live.StorageVersion = "3.6.0"
	if why := downgradeDone(f, "3.6.16"); why != "" {
		t.Errorf("downgradeDone: %q", why)
	}
	f.Downgrade = &assess.Downgrade{Target: "3.6.0"}
	if why := downgradeDone(f, "3.6.16"); !strings.Contains(why, "still enabled") {
		t.Errorf("a downgrade still enabled is not done: %q", why)
	}
	f.Downgrade = nil
	f.Members[0].Live.Version = "3.7.3"
	if why := downgradeDone(f, "3.6.16"); !strings.Contains(why, "m1 runs 3.7.3") {
		t.Errorf("a member still on the newer binary: %q", why)
	}
}

func TestSnapshotsSince(t *testing.T) {
	withMetrics := func(f assess.Facts, saved ...int64) assess.Facts {
		for i := range f.Members {
			if f.Members[i].Live != nil && i < len(saved) {
				f.Members[i].Live.Metrics = &cluster.Metrics{SnapshotsSaved: saved[i], StartTime: 100}
			}
		}
		return f
	}
	marks, why := snapshotMarks(withMetrics(facts("m1 3.6.16", "m2 3.6.16", "m3 3.6.16"), 0, 1, 0))
	if why != "" {
		t.Fatal(why)
	}
	if got := snapshotsSince(withMetrics(facts("m1 3.6.16", "m2 3.6.16", "m3 3.6.16"), 1, 1, 0), marks); got != "no snapshot saved yet by m2, m3" {
		t.Errorf("two members waiting: %q", got)
	}
	restarted := withMetrics(facts("m1 3.6.16", "m2 3.6.16", "m3 3.6.16"), 1, 2, 1)
	restarted.Members[2].Live.Metrics.StartTime = 200
	if got := snapshotsSince(restarted, marks); got != "" {
		t.Errorf("every member saved one (m3 after a restart): %q", got)
	}
	if _, why := snapshotMarks(withMetrics(facts("m1 3.6.16", "m2 3.6.16"), 0, -1)); !strings.Contains(why, "m2 serves no") {
		t.Errorf("a member without the metric: %q", why)
	}
	if _, why := snapshotMarks(withMetrics(facts("m1 3.6.16", "m2 -"), 0)); why != "m2 does not answer" {
		t.Errorf("a member down: %q", why)
	}
}
