package cluster

import "testing"

func TestSavedSnapshotSince(t *testing.T) {
	before := Metrics{SnapshotsSaved: 2, StartTime: 100}
	for _, tc := range []struct {
		name string
		now  Metrics
		want bool
	}{
		{"no new snapshot", Metrics{SnapshotsSaved: 2, StartTime: 100}, false},
		{"one more", Metrics{SnapshotsSaved: 3, StartTime: 100}, true},
		{"restarted, none since", Metrics{SnapshotsSaved: 0, StartTime: 200}, false},
		{"restarted, one since", Metrics{SnapshotsSaved: 1, StartTime: 200}, true},
		{"metric not served", Metrics{SnapshotsSaved: -1, StartTime: 100}, false},
	} {
		if got := tc.now.SavedSnapshotSince(before); got != tc.want {
			t.Errorf("%s: SavedSnapshotSince = %v, want %v", tc.name, got, tc.want)
		}
	}
}
