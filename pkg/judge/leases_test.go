package judge

import (
	"reflect"
	"testing"
	"time"
)

func TestLeasesPlantedFaults(t *testing.T) {
	s := int64(time.Second)
	// Granted at 0 with a 2 s TTL, kept alive at 1 s: it may expire from 3 s on.
	rec := LeaseRecord{TTL: 2 * time.Second, Kept: 1 * s, Renewals: []int64{1 * s}}
	cases := []struct {
		name    string
		rec     LeaseRecord
		deleted []LeaseDeletion
		want    []Check
	}{
		{"expired on time, seen by two watchers", rec, []LeaseDeletion{{At: 3*s + 100, Rev: 9}, {At: 3*s + 200, Rev: 9}}, nil},
		{"never expired", rec, nil, nil},
		{"expired early", rec, []LeaseDeletion{{At: 2 * s, Rev: 9}}, []Check{LeaseExpiredEarly}},
		{"expired twice", rec, []LeaseDeletion{{At: 3 * s, Rev: 9}, {At: 4 * s, Rev: 12}}, []Check{LeaseExpiredTwice}},
		{"kept alive after expiry", LeaseRecord{TTL: rec.TTL, Kept: 5 * s, Renewals: []int64{1 * s, 5 * s}}, []LeaseDeletion{{At: 4 * s, Rev: 9}},
			// The late keep-alive also moved Kept past the deletion: expired early, as the
			// cluster told the client it still held the lease.
			[]Check{LeaseExpiredEarly, LeaseKeptAfterExpiry}},
	}
	for _, c := range cases {
		deleted := map[int64][]LeaseDeletion{}
		if c.deleted != nil {
			deleted[7] = c.deleted
		}
		fs, expired := Leases(map[int64]LeaseRecord{7: c.rec}, deleted)
		if got := Fired(fs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: fired %v, want %v (%v)", c.name, got, c.want, Strings(fs))
		}
		if want := min(len(c.deleted), 1); expired != want {
			t.Errorf("%s: %d expired, want %d", c.name, expired, want)
		}
	}
}
