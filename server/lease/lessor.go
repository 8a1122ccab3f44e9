// Package lease keeps leases: their TTLs, which keys hang on them, and when they expire. Grants
// and revokes arrive through raft (so every member agrees); expiry is judged only by the
// leader, which then proposes the revoke.
package lease

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/backend"
	"etcdx/server/failpoint"
	"etcdx/server/schema"
)

var (
	ErrNotFound    = errors.New("lease not found")
	ErrExists      = errors.New("lease already exists")
	ErrNotPrimary  = errors.New("not the lease primary (leader)")
	ErrTTLTooLarge = errors.New("too large lease TTL")
)

// ExpiryCheck is how often the leader looks for expired leases to revoke (upstream's lessor
// checks every 500 ms).
const ExpiryCheck = 500 * time.Millisecond

// MaxTTL is the largest TTL a lease may have (9,000,000,000 seconds, as upstream).
const MaxTTL = 9000000000

// forever is the expiry of leases on a member that does not judge expiry.
var forever = time.Unix(math.MaxInt64>>1, 0)

// Lease is one lease's state.
type Lease struct {
	ID     int64
	TTL    int64
	expiry time.Time
	keys   map[string]struct{}
	// remaining is the TTL left at the last checkpoint (0: none); a new leader starts from it.
	remaining int64
	// revoked is closed when the lease's revocation is applied (Forget) or it vanishes in a
	// reload: keep-alives of an expired lease wait for it.
	revoked chan struct{}
}

// timeLeft is the time before expiry (negative: expired; very large: not judged here).
func (l *Lease) timeLeft(now time.Time) time.Duration { return l.expiry.Sub(now) }

// Info is a copy of a lease for callers.
type Info struct {
	ID           int64
	TTL          int64
	RemainingTTL int64 // seconds; -1 when this member does not track expiry
	Keys         [][]byte
}

// Lessor holds every lease. Safe for concurrent use.
type Lessor struct {
	be     *backend.Backend
	minTTL int64
	// now is the clock expiry is judged by: time.Now (monotonic), or the simulation's.
	now func() time.Time

	mu     sync.RWMutex
	leases map[int64]*Lease
	// keyLease is the lease each attached key hangs on: a put finds the lease it replaces here
	// instead of reading the old value from the database.
	keyLease map[string]int64
	primary  bool
	// demoted is closed when this member stops judging expiry (a new one at each Promote).
	demoted chan struct{}
}

// New loads the leases stored in the backend. minTTL is the smallest TTL a grant gets; now is the
// clock leases expire by (nil: time.Now).
func New(be *backend.Backend, minTTL int64, now func() time.Time) (*Lessor, error) {
	if now == nil {
		now = time.Now
	}
	l := &Lessor{be: be, minTTL: minTTL, now: now, leases: map[int64]*Lease{}, keyLease: map[string]int64{}, demoted: closedChan()}
	if err := l.Reload(); err != nil {
		return nil, err
	}
	return l, nil
}

// Reload replaces every lease with those stored in the backend (after a snapshot from the
// leader); key attachments are rebuilt by the MVCC store's reload.
func (l *Lessor) Reload() error {
	leases := map[int64]*Lease{}
	err := l.be.View(func(tx *bolt.Tx) error {
		return tx.Bucket(schema.Lease).ForEach(func(k, v []byte) error {
			rec, err := schema.DecodeLease(v)
			if err != nil {
				return fmt.Errorf("lease %x: %w", k, err)
			}
			leases[rec.ID] = &Lease{ID: rec.ID, TTL: rec.TTL, remaining: rec.RemainingTTL, expiry: forever, keys: map[string]struct{}{}, revoked: make(chan struct{})}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("lease: load: %w", err)
	}
	l.mu.Lock()
	for id, old := range l.leases {
		if ls, ok := leases[id]; ok {
			ls.revoked = old.revoked // still the same lease: its waiters go on waiting
		} else {
			close(old.revoked)
		}
	}
	l.leases = leases
	l.keyLease = map[string]int64{}
	if l.primary {
		now := l.now()
		for _, ls := range leases {
			ls.expiry = now.Add(time.Duration(ls.TTL) * time.Second)
		}
	}
	l.mu.Unlock()
	return nil
}

// Grant creates a lease (applied from raft) inside the caller's batch.
func (l *Lessor) Grant(b *backend.BatchTx, id, ttl int64) (*Info, error) {
	if id == 0 {
		return nil, ErrNotFound
	}
	if ttl > MaxTTL {
		return nil, ErrTTLTooLarge
	}
	if ttl < l.minTTL {
		ttl = l.minTTL
	}
	if l.Exists(id) {
		return nil, ErrExists
	}
	if err := b.Put(schema.Lease, schema.LeaseKey(id), schema.LeaseRecord{ID: id, TTL: ttl}.Encode()); err != nil {
		return nil, err
	}
	ls := &Lease{ID: id, TTL: ttl, expiry: forever, keys: map[string]struct{}{}, revoked: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.primary {
		ls.expiry = l.now().Add(time.Duration(ttl) * time.Second)
	}
	l.leases[id] = ls
	return &Info{ID: id, TTL: ttl}, nil
}

// Keys returns the keys attached to a lease, sorted.
func (l *Lessor) Keys(id int64) ([][]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ls, ok := l.leases[id]
	if !ok {
		return nil, ErrNotFound
	}
	return sortedKeys(ls), nil
}

func sortedKeys(ls *Lease) [][]byte {
	ks := make([]string, 0, len(ls.keys))
	for k := range ls.keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	out := make([][]byte, len(ks))
	for i, k := range ks {
		out[i] = []byte(k)
	}
	return out
}

// Forget removes a revoked lease's record; the caller has already deleted its keys.
func (l *Lessor) Forget(id int64, b *backend.BatchTx) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.leases[id]
	if !ok {
		return ErrNotFound
	}
	for k := range ls.keys {
		if l.keyLease[k] == id {
			delete(l.keyLease, k)
		}
	}
	delete(l.leases, id)
	close(ls.revoked)
	return b.Delete(schema.Lease, schema.LeaseKey(id))
}

// Renew restarts a lease's TTL (leader only) and returns the TTL. checkpointed reports that the
// lease had a checkpointed remaining TTL, which the caller must clear through raft so a later
// leader does not cut the renewed lease short.
//
// An expired lease is not brought back, as upstream's is not: its revocation is on its way
// through raft (the leader's lease loop), and the keep-alive waits for it and answers
// ErrNotFound, or ErrNotPrimary if this member stops leading first.
func (l *Lessor) Renew(ctx context.Context, id int64) (ttl int64, checkpointed bool, err error) {
	l.mu.Lock()
	if !l.primary {
		l.mu.Unlock()
		return -1, false, ErrNotPrimary
	}
	ls, ok := l.leases[id]
	if !ok {
		l.mu.Unlock()
		return -1, false, ErrNotFound
	}
	now := l.now()
	if ls.timeLeft(now) <= 0 {
		revoked, demoted := ls.revoked, l.demoted
		l.mu.Unlock()
		select {
		case <-revoked:
			return -1, false, ErrNotFound
		case <-demoted:
			return -1, false, ErrNotPrimary
		case <-ctx.Done():
			return -1, false, ctx.Err()
		}
	}
	if failpoint.Enabled {
		// Upstream's point between finding the lease and renewing it: a revoke may land here,
		// and the renewal then finds the lease gone.
		l.mu.Unlock()
		failpoint.At(failpoint.BeforeCheckpointInLeaseRenew)
		l.mu.Lock()
		if ls, ok = l.leases[id]; !ok {
			l.mu.Unlock()
			return -1, false, ErrNotFound
		}
		now = l.now()
	}
	defer l.mu.Unlock()
	ls.expiry = now.Add(time.Duration(ls.TTL) * time.Second)
	return ls.TTL, ls.remaining > 0, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Checkpoint records a remaining TTL (applied from raft on every member); 0 clears it. With a
// batch (the lease-checkpoint-persist feature is on), the lease record keeps it too, so it
// survives every member restarting, not only a leader change.
func (l *Lessor) Checkpoint(b *backend.BatchTx, id, remaining int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.leases[id]
	if !ok {
		return nil
	}
	ls.remaining = remaining
	if b == nil {
		return nil
	}
	return b.Put(schema.Lease, schema.LeaseKey(id), schema.LeaseRecord{ID: id, TTL: ls.TTL, RemainingTTL: remaining}.Encode())
}

// Remaining returns, for the leader's checkpoint round every interval, the remaining TTL of
// every lease that has run down since it was granted or renewed, of those longer than the
// interval: as upstream's lessor, which schedules a lease's checkpoint only while its remaining
// TTL exceeds the interval, so one that expires before a round is never checkpointed.
func (l *Lessor) Remaining(interval time.Duration) map[int64]int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.primary {
		return nil
	}
	now := l.now()
	out := map[int64]int64{}
	for id, ls := range l.leases {
		rem := int64(math.Ceil(ls.timeLeft(now).Seconds()))
		if rem > 0 && rem < ls.TTL && ls.TTL > int64(interval.Seconds()) {
			out[id] = rem
		}
	}
	return out
}

// Lookup returns a lease's state.
func (l *Lessor) Lookup(id int64) (*Info, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ls, ok := l.leases[id]
	if !ok {
		return nil, ErrNotFound
	}
	return l.info(ls, l.now()), nil
}

func (l *Lessor) info(ls *Lease, now time.Time) *Info {
	in := &Info{ID: ls.ID, TTL: ls.TTL, RemainingTTL: -1, Keys: sortedKeys(ls)}
	if l.primary {
		rem := ls.timeLeft(now)
		// Whole seconds left, rounded down as upstream reports them (59 just after a 60 s grant).
		in.RemainingTTL = int64(rem.Seconds())
		if in.RemainingTTL < 0 {
			in.RemainingTTL = 0
		}
	}
	return in
}

// Exists reports whether a lease is known.
func (l *Lessor) Exists(id int64) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.leases[id]
	return ok
}

// List returns every lease ID.
func (l *Lessor) List() []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ids := make([]int64, 0, len(l.leases))
	for id := range l.leases {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Attach implements mvcc.LeaseAttacher.
func (l *Lessor) Attach(id int64, key []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.leases[id]; ok {
		k := string(key) // one copy for both maps: a lease's keys are most of the lessor's heap
		ls.keys[k] = struct{}{}
		l.keyLease[k] = id
	}
}

// Detach implements mvcc.LeaseAttacher.
func (l *Lessor) Detach(id int64, key []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.leases[id]; ok {
		delete(ls.keys, string(key))
	}
	if l.keyLease[string(key)] == id {
		delete(l.keyLease, string(key))
	}
}

// LeaseOf implements mvcc.LeaseAttacher: the lease key is attached to, 0 if none.
func (l *Lessor) LeaseOf(key []byte) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.keyLease[string(key)]
}

// Promote makes this member judge expiry: every lease gets its checkpointed remaining TTL (or
// its full TTL if it has none) plus extend, so an election neither expires leases whose holders
// kept them alive on the old leader nor gives neglected leases a fresh TTL.
func (l *Lessor) Promote(extend time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		l.demoted = make(chan struct{})
	}
	l.primary = true
	now := l.now()
	for _, ls := range l.leases {
		ttl := ls.TTL
		if ls.remaining > 0 && ls.remaining < ttl {
			ttl = ls.remaining // carry on from the last checkpoint, not from a fresh TTL
		}
		ls.expiry = now.Add(time.Duration(ttl)*time.Second + extend)
	}
}

// Demote stops judging expiry.
func (l *Lessor) Demote() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.primary {
		close(l.demoted)
	}
	l.primary = false
	for _, ls := range l.leases {
		ls.expiry = forever
	}
}

// Expired returns up to max leases past their expiry (leader only), the longest expired first
// (then by ID), so a leader revokes the same leases in the same order whatever the map's.
func (l *Lessor) Expired(max int) []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.primary {
		return nil
	}
	now := l.now()
	var due []*Lease
	for _, ls := range l.leases {
		if ls.timeLeft(now) <= 0 {
			due = append(due, ls)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].expiry.Equal(due[j].expiry) {
			return due[i].expiry.Before(due[j].expiry)
		}
		return due[i].ID < due[j].ID
	})
	ids := make([]int64, 0, min(len(due), max))
	for _, ls := range due[:min(len(due), max)] {
		ids = append(ids, ls.ID)
	}
	return ids
}
