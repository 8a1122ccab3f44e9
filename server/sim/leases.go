package sim

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// leaseLog records, for each lease a client granted and attached a key to, its TTL and the
// latest moment the cluster was told to keep it (the call of the last acknowledged grant or
// keep-alive), and every acknowledged keep-alive.
type leaseLog struct {
	mu     sync.Mutex
	leases map[int64]*leaseRec
}

type leaseRec struct {
	ttl time.Duration
	// kept is the call time of the last acknowledged grant or keep-alive; renewals, the call
	// times of every acknowledged keep-alive.
	kept     int64
	renewals []int64
}

func newLeaseLog() *leaseLog { return &leaseLog{leases: map[int64]*leaseRec{}} }

// longestTTL is the longest TTL granted.
func (l *leaseLog) longestTTL() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d time.Duration
	for _, r := range l.leases {
		d = max(d, r.ttl)
	}
	return d
}

// leaseKey is the key a lease's client attaches to it; its deletion is the lease's expiry.
func leaseKey(id int64) string { return fmt.Sprintf("lease/%016x", id) }

// runLeaseClient grants short leases with a key each, keeps each alive a few times through
// random members, then lets it expire, until stop.
func runLeaseClient(c *Cluster, h *History, log *leaseLog, rng *rand.Rand, stop <-chan struct{}) {
	pick := func() interface {
		LeaseGrant(context.Context, *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error)
		Put(context.Context, *pb.PutRequest) (*pb.PutResponse, error)
		LeaseRenew(context.Context, int64) (int64, error)
	} {
		up := c.Up()
		if len(up) == 0 {
			return nil
		}
		if s := up[rng.Intn(len(up))].Server(); s != nil {
			return s
		}
		return nil
	}
	for {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		s := pick()
		if s == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		call := h.now()
		g, err := s.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 1})
		if err == nil {
			_, err = s.Put(ctx, &pb.PutRequest{Key: []byte(leaseKey(g.ID)), Value: []byte("x"), Lease: g.ID})
		}
		cancel()
		if err != nil {
			continue
		}
		rec := &leaseRec{ttl: time.Duration(g.TTL) * time.Second, kept: call}
		log.mu.Lock()
		log.leases[g.ID] = rec
		log.mu.Unlock()
		for k := rng.Intn(3); k > 0; k-- {
			select {
			case <-stop:
				return
			// Sometimes later than the TTL: a keep-alive that comes after the lease expired
			// must not bring it back.
			case <-time.After(time.Duration(100+rng.Intn(1400)) * time.Millisecond):
			}
			s := pick()
			if s == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			call := h.now()
			ttl, err := s.LeaseRenew(ctx, g.ID)
			cancel()
			if err == nil && ttl > 0 {
				log.mu.Lock()
				rec.kept = max(rec.kept, call)
				rec.renewals = append(rec.renewals, call)
				log.mu.Unlock()
			}
		}
	}
}

// checkLeases: a lease's key is deleted (it expired) no earlier than its TTL after the last
// keep-alive the cluster acknowledged, at most once, and no keep-alive is acknowledged for it
// after its key was seen deleted.
func checkLeases(w *watchers, log *leaseLog, res *Result) {
	w.mu.Lock()
	logs := append([]watchLog(nil), w.got...)
	w.mu.Unlock()
	deletedAt := map[int64]int64{} // lease -> first moment a watch saw its key deleted
	deletions := map[int64]int64{} // lease -> revisions its key was deleted at, counted once each
	seenRev := map[[2]int64]bool{} // {lease, revision}
	for _, l := range logs {
		for i, ev := range l.events {
			if !ev.Delete || !strings.HasPrefix(ev.Key, "lease/") {
				continue
			}
			id, err := strconv.ParseUint(strings.TrimPrefix(ev.Key, "lease/"), 16, 64)
			if err != nil {
				continue
			}
			lid := int64(id)
			if at, ok := deletedAt[lid]; !ok || l.at[i] < at {
				deletedAt[lid] = l.at[i]
			}
			if !seenRev[[2]int64{lid, ev.Rev}] {
				seenRev[[2]int64{lid, ev.Rev}] = true
				deletions[lid]++
			}
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for id, rec := range log.leases {
		at, ok := deletedAt[id]
		if !ok {
			continue
		}
		res.LeasesExpired++
		if early := time.Duration(rec.kept) + rec.ttl - time.Duration(at); early > 0 {
			res.failf("lease %016x expired early: its key was deleted %v before its %v TTL ran out since the last acknowledged keep-alive", id, early.Round(time.Millisecond), rec.ttl)
		}
		if deletions[id] > 1 {
			res.failf("lease %016x expired %d times", id, deletions[id])
		}
		for _, r := range rec.renewals {
			if r > at {
				res.failf("lease %016x: a keep-alive sent %v after its key was deleted was acknowledged", id, time.Duration(r-at).Round(time.Millisecond))
			}
		}
	}
}
