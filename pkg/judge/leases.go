package judge

import (
	"fmt"
	"sort"
	"time"
)

const (
	// LeaseExpiredEarly: a lease's key was deleted (it expired) before its TTL had run out
	// since the last keep-alive the cluster acknowledged.
	LeaseExpiredEarly Check = "lease-expired-early"
	// LeaseExpiredTwice: a lease's key was deleted at more than one revision.
	LeaseExpiredTwice Check = "lease-expired-twice"
	// LeaseKeptAfterExpiry: the cluster acknowledged a keep-alive sent after the lease's key
	// was seen deleted.
	LeaseKeptAfterExpiry Check = "lease-kept-after-expiry"
	// LeaseNeverExpired: a lease left without keep-alives still holds its key well after its
	// TTL (a harness that reads the cluster live decides how long is well after).
	LeaseNeverExpired Check = "lease-never-expired"
)

// LeaseRecord is what a client did with one lease, on the harness's clock (nanoseconds): its
// TTL, the call time of the last acknowledged grant or keep-alive (Kept), the call times of
// every acknowledged keep-alive.
type LeaseRecord struct {
	TTL      time.Duration
	Kept     int64
	Renewals []int64
}

// LeaseDeletion is a watch's sight of a lease's key deleted: when (the harness's clock) and
// at which revision.
type LeaseDeletion struct {
	At, Rev int64
}

// Leases judges each lease of leases (by ID) against every sight of its key's deletion
// (deleted; several watchers may see the same deletion): LeaseExpiredEarly,
// LeaseExpiredTwice, LeaseKeptAfterExpiry. It also returns how many leases were seen to
// expire.
func Leases(leases map[int64]LeaseRecord, deleted map[int64][]LeaseDeletion) (fs []Finding, expired int) {
	ids := make([]int64, 0, len(leases))
	for id := range leases {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		rec, sights := leases[id], deleted[id]
		if len(sights) == 0 {
			continue
		}
		expired++
		first := sights[0].At
		revs := map[int64]bool{}
		for _, d := range sights {
			first = min(first, d.At)
			revs[d.Rev] = true
		}
		if early := time.Duration(rec.Kept) + rec.TTL - time.Duration(first); early > 0 {
			fs = append(fs, Finding{LeaseExpiredEarly, fmt.Sprintf("lease %016x: its key was deleted %v before its %v TTL ran out since the last acknowledged keep-alive",
				id, early.Round(time.Millisecond), rec.TTL)})
		}
		if len(revs) > 1 {
			fs = append(fs, Finding{LeaseExpiredTwice, fmt.Sprintf("lease %016x expired %d times", id, len(revs))})
		}
		for _, r := range rec.Renewals {
			if r > first {
				fs = append(fs, Finding{LeaseKeptAfterExpiry, fmt.Sprintf("lease %016x: a keep-alive sent %v after its key was deleted was acknowledged",
					id, time.Duration(r-first).Round(time.Millisecond))})
				break
			}
		}
	}
	return fs, expired
}
