package judge

import (
	"reflect"
	"testing"
	"time"
)

// sampleAt is a sample at ms milliseconds; testDowngrade a downgrade to 3.6 enabled at 5 ms.
func sampleAt(ms int64, cluster, level, storage string) VersionSample {
	return VersionSample{At: ms * int64(time.Millisecond), Cluster: cluster, Level: level, Storage: storage}
}

var testDowngrade = DowngradeWindow{Target: "3.6", From: 5 * int64(time.Millisecond)}

// versionCase is one history of a member's samples and the checks it must fire.
type versionCase struct {
	name string
	seen []VersionSample
	dg   DowngradeWindow
	want []Check
}

func TestClusterVersionsPlantedFaults(t *testing.T) {
	at := func(ms int64, cluster, level string) VersionSample { return sampleAt(ms, cluster, level, "") }
	dg := testDowngrade
	cases := []versionCase{
		{"raised with the members' levels", []VersionSample{at(0, "", "3.7"), at(1, "3.6", "3.7"), at(2, "3.7", "3.7")}, DowngradeWindow{}, nil},
		{"lowered without a downgrade", []VersionSample{at(1, "3.7", "3.7"), at(2, "3.6", "3.7")}, DowngradeWindow{}, []Check{ClusterVersionLowered}},
		{"above the member's level", []VersionSample{at(1, "3.7", "3.6")}, DowngradeWindow{}, []Check{ClusterVersionAboveLevel}},
		{"above a member at the downgrade's target, before the leader lowered it", []VersionSample{at(6, "3.7", "3.6"), at(7, "3.6", "3.6")}, dg, nil},
		{"above a member at the target before the downgrade was asked for", []VersionSample{at(4, "3.7", "3.6")}, dg, []Check{ClusterVersionAboveLevel}},
		{"above a member at another level than the target", []VersionSample{at(6, "3.7", "3.5")}, dg, []Check{ClusterVersionAboveLevel}},
		{"lowered to the target after the downgrade was asked for", []VersionSample{at(1, "3.7", "3.7"), at(6, "3.6", "3.7"), at(7, "3.6", "3.6")}, dg, nil},
		{"lowered before the downgrade was asked for", []VersionSample{at(1, "3.7", "3.7"), at(4, "3.6", "3.7")}, dg, []Check{ClusterVersionLowered}},
		{"lowered below the downgrade's target", []VersionSample{at(1, "3.7", "3.7"), at(6, "3.5", "3.7")}, dg, []Check{ClusterVersionLowered}},
		{"both, each once", []VersionSample{at(1, "3.7", "3.6"), at(2, "3.6", "3.6"), at(3, "3.7", "3.6"), at(4, "3.5", "3.6")}, DowngradeWindow{}, []Check{ClusterVersionAboveLevel, ClusterVersionLowered}},
	}
	for _, c := range cases {
		fs := ClusterVersions("m1", c.seen, []DowngradeWindow{c.dg})
		if got := Fired(fs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: fired %v, want %v (%v)", c.name, got, c.want, Strings(fs))
		}
		if len(fs) != len(c.want) {
			t.Errorf("%s: %d findings, want one per check: %v", c.name, len(fs), Strings(fs))
		}
	}
}

func TestStorageVersionsPlantedFaults(t *testing.T) {
	at := sampleAt
	dg := testDowngrade
	cases := []versionCase{
		{"a 3.5 member keeps none", []VersionSample{at(1, "3.5", "3.5", "")}, DowngradeWindow{}, nil},
		{"follows an upgrade", []VersionSample{at(1, "3.6", "3.7", "3.6"), at(2, "3.7", "3.7", "3.6"), at(3, "3.7", "3.7", "3.7")}, DowngradeWindow{}, nil},
		{"follows a downgrade", []VersionSample{at(1, "3.7", "3.7", "3.7"), at(6, "3.6", "3.7", "3.7"), at(7, "3.6", "3.7", "3.6"), at(8, "3.6", "3.6", "3.6")}, dg, nil},
		{"migrated up before the cluster version", []VersionSample{at(1, "3.6", "3.7", "3.7")}, DowngradeWindow{}, []Check{StorageVersionAheadOfCluster}},
		{"above the cluster version before the downgrade", []VersionSample{at(1, "3.7", "3.7", "3.7"), at(4, "3.6", "3.7", "3.7")}, dg, []Check{ClusterVersionLowered, StorageVersionAheadOfCluster}},
		{"a binary on newer storage", []VersionSample{at(8, "3.6", "3.6", "3.7")}, dg, []Check{StorageVersionAboveLevel}},
	}
	for _, c := range cases {
		fs := ClusterVersions("m1", c.seen, []DowngradeWindow{c.dg})
		if got := Fired(fs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: fired %v, want %v (%v)", c.name, got, c.want, Strings(fs))
		}
	}
	settled := []struct {
		name string
		v    VersionSample
		ok   bool
	}{
		{"at the cluster version", at(9, "3.7", "3.7", "3.7"), true},
		{"at its level, below the cluster's", at(9, "3.7", "3.6", "3.6"), true},
		{"a 3.5 member", at(9, "3.5", "3.5", ""), true},
		{"no cluster version yet", at(9, "", "3.7", "3.5"), true},
		{"left behind an upgrade", at(9, "3.7", "3.7", "3.6"), false},
		{"left above a finished downgrade", at(9, "3.6", "3.7", "3.7"), false},
	}
	for _, c := range settled {
		fs := StorageSettled("m1", c.v)
		if ok := len(fs) == 0; ok != c.ok {
			t.Errorf("%s: %v", c.name, Strings(fs))
		}
		if !c.ok && !reflect.DeepEqual(Fired(fs), []Check{StorageVersionNotFollowing}) {
			t.Errorf("%s: fired %v", c.name, Fired(fs))
		}
	}
}

func TestClusterVersionsSeveralDowngrades(t *testing.T) {
	ms := int64(time.Millisecond)
	windows := []DowngradeWindow{{Target: "3.6", From: 5 * ms}, {Target: "3.5", From: 10 * ms}}
	ok := []VersionSample{{At: 1 * ms, Cluster: "3.7", Level: "3.7"}, {At: 6 * ms, Cluster: "3.6", Level: "3.7"}, {At: 11 * ms, Cluster: "3.5", Level: "3.6"}}
	if fs := ClusterVersions("m1", ok, windows); len(fs) != 0 {
		t.Fatalf("two downgrades, each after it was enabled: %v", Strings(fs))
	}
	early := []VersionSample{{At: 1 * ms, Cluster: "3.7", Level: "3.7"}, {At: 6 * ms, Cluster: "3.6", Level: "3.7"}, {At: 8 * ms, Cluster: "3.5", Level: "3.6"}}
	if got := Fired(ClusterVersions("m1", early, windows)); !reflect.DeepEqual(got, []Check{ClusterVersionLowered}) {
		t.Fatalf("the second downgrade before it was enabled: fired %v", got)
	}
}

// One member's cluster version against the others' levels: the planted fault is a cluster
// version raised while a member still ran the older level (a leader that took an unknown
// member's version for a newer one).
func TestClusterVersionsAcrossPlantedFaults(t *testing.T) {
	at := func(ms int64, cluster, level string) VersionSample { return sampleAt(ms, cluster, level, "") }
	for _, c := range []struct {
		name string
		seen map[string][]VersionSample
		dg   DowngradeWindow
		want []Check
	}{
		{"raised once the last member was swapped", map[string][]VersionSample{
			"m1": {at(1, "3.5", "3.6"), at(4, "3.6", "3.6")},
			"m2": {at(2, "3.5", "3.5"), at(3, "3.5", "3.6"), at(5, "3.6", "3.6")},
		}, DowngradeWindow{}, nil},
		{"raised while a member ran the older level", map[string][]VersionSample{
			"m1": {at(1, "3.5", "3.6"), at(2, "3.6", "3.6")},
			"m2": {at(3, "3.5", "3.5")},
		}, DowngradeWindow{}, []Check{ClusterVersionAboveAMember}},
		{"a member's own report is its own check's", map[string][]VersionSample{
			"m1": {at(1, "3.7", "3.6")},
		}, DowngradeWindow{}, nil},
		{"a downgrade swaps levels down", map[string][]VersionSample{
			"m1": {at(1, "3.7", "3.7"), at(6, "3.6", "3.7")},
			"m2": {at(2, "3.7", "3.7"), at(7, "3.6", "3.6")},
		}, testDowngrade, nil},
	} {
		fs := ClusterVersionsAcross(c.seen, []DowngradeWindow{c.dg})
		if got := Fired(fs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: fired %v, want %v (%v)", c.name, got, c.want, Strings(fs))
		}
	}
}
