package judge

import (
	"reflect"
	"testing"
	"time"
)

func TestClusterVersionsPlantedFaults(t *testing.T) {
	at := func(ms int64, cluster, level string) VersionSample {
		return VersionSample{At: ms * int64(time.Millisecond), Cluster: cluster, Level: level}
	}
	dg := DowngradeWindow{Target: "3.6", From: 5 * int64(time.Millisecond)}
	cases := []struct {
		name string
		seen []VersionSample
		dg   DowngradeWindow
		want []Check
	}{
		{"raised with the members' levels", []VersionSample{at(0, "", "3.7"), at(1, "3.6", "3.7"), at(2, "3.7", "3.7")}, DowngradeWindow{}, nil},
		{"lowered without a downgrade", []VersionSample{at(1, "3.7", "3.7"), at(2, "3.6", "3.7")}, DowngradeWindow{}, []Check{ClusterVersionLowered}},
		{"above the member's level", []VersionSample{at(1, "3.7", "3.6")}, DowngradeWindow{}, []Check{ClusterVersionAboveLevel}},
		{"lowered to the target after the downgrade was asked for", []VersionSample{at(1, "3.7", "3.7"), at(6, "3.6", "3.7"), at(7, "3.6", "3.6")}, dg, nil},
		{"lowered before the downgrade was asked for", []VersionSample{at(1, "3.7", "3.7"), at(4, "3.6", "3.7")}, dg, []Check{ClusterVersionLowered}},
		{"lowered below the downgrade's target", []VersionSample{at(1, "3.7", "3.7"), at(6, "3.5", "3.7")}, dg, []Check{ClusterVersionLowered}},
		{"both, each once", []VersionSample{at(1, "3.7", "3.6"), at(2, "3.6", "3.6"), at(3, "3.7", "3.6"), at(4, "3.5", "3.6")}, DowngradeWindow{}, []Check{ClusterVersionAboveLevel, ClusterVersionLowered}},
	}
	for _, c := range cases {
		fs := ClusterVersions("m1", c.seen, c.dg)
		if got := Fired(fs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: fired %v, want %v (%v)", c.name, got, c.want, Strings(fs))
		}
		if len(fs) != len(c.want) {
			t.Errorf("%s: %d findings, want one per check: %v", c.name, len(fs), Strings(fs))
		}
	}
}
