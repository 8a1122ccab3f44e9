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

	"etcdx/pkg/judge"
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

// checkLeases: judge.Leases on what the lease client recorded and every watch's sight of a
// lease key's deletion.
func checkLeases(w *watchers, log *leaseLog, res *Result) {
	w.mu.Lock()
	logs := append([]watchLog(nil), w.got...)
	w.mu.Unlock()
	deleted := map[int64][]judge.LeaseDeletion{}
	for _, l := range logs {
		for i, ev := range l.events {
			if !ev.Delete || !strings.HasPrefix(ev.Key, "lease/") {
				continue
			}
			id, err := strconv.ParseUint(strings.TrimPrefix(ev.Key, "lease/"), 16, 64)
			if err != nil {
				continue
			}
			deleted[int64(id)] = append(deleted[int64(id)], judge.LeaseDeletion{At: l.at[i], Rev: ev.Rev})
		}
	}
	log.mu.Lock()
	recs := make(map[int64]judge.LeaseRecord, len(log.leases))
	for id, r := range log.leases {
		recs[id] = judge.LeaseRecord{TTL: r.ttl, Kept: r.kept, Renewals: append([]int64(nil), r.renewals...)}
	}
	log.mu.Unlock()
	fs, expired := judge.Leases(recs, deleted)
	res.LeasesExpired += expired
	res.found(fs...)
}
