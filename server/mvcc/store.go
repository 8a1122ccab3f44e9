package mvcc

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/server/backend"
	"etcdx/server/failpoint"
	"etcdx/server/schema"
)

var (
	ErrCompacted = errors.New("mvcc: required revision has been compacted")
	ErrFutureRev = errors.New("mvcc: required revision is a future revision")
)

// LeaseAttacher is told which keys are attached to which lease as they change.
type LeaseAttacher interface {
	Attach(lease int64, key []byte)
	Detach(lease int64, key []byte)
	// LeaseOf is the lease key is attached to (0: none).
	LeaseOf(key []byte) int64
}

// Store is the MVCC key-value store. Writes come from one goroutine (raft apply); reads from many.
type Store struct {
	be  *backend.Backend
	log *slog.Logger

	// viewMu is held shared by every read view for its life and exclusively by what moves the
	// floor under one (scheduling a compaction, reloading from a snapshot), so a view's revision
	// stays readable to its end, as upstream's reads hold off compactions. Writes do not take
	// it: a long read (a page of 10,000 pods) holds mu only while it looks keys up in the index.
	viewMu sync.RWMutex
	// mu guards idx, currentRev, compactRev and buf. Lock order: backend batch, then viewMu,
	// then mu, then the watch groups' lock.
	mu         sync.RWMutex
	idx        *treeIndex
	currentRev int64
	compactRev int64
	// finishedRev is the last compaction whose backend clean-up finished: a compaction scheduled
	// while the one before has not (or resumed at start) hashes only part of what it compacts.
	finishedRev int64
	// buf holds values written but not yet committed to the backend, by revision key.
	buf map[string][]byte

	leases LeaseAttacher
	watch  *watchGroups
	// pages carries counts between the pages of a paginated read.
	pages pageCounts
	// scratch holds *readScratch for ranges to reuse.
	scratch sync.Pool

	metrics   *metrics
	compactMu sync.Mutex
	// compactHashes are the last compactions' hashes of the key bucket (HashKV answers with them).
	compactHashes compactHashes
	// compactBatch and compactPause pace the backend clean-up; guarded by compactMu.
	compactBatch int
	compactPause time.Duration
	// stepped: compactions wait in queued for StepCompaction (guarded by compactMu).
	stepped bool
	queued  []*queuedCompaction
	// stop ends background work (watch sync, backend compaction); bg tracks it.
	stop     chan struct{}
	bg       sync.WaitGroup
	stopOnce sync.Once
}

// Open rebuilds the store from the backend. leases may be nil.
func Open(be *backend.Backend, lg *slog.Logger, leases LeaseAttacher) (*Store, error) {
	// Revision 1 is the empty store, as upstream: the first change gets revision 2.
	s := &Store{be: be, log: lg, idx: newTreeIndex(), buf: map[string][]byte{}, compactRev: -1, currentRev: 1,
		leases: leases, stop: make(chan struct{}), metrics: newMetrics()}
	s.watch = newWatchGroups(s)
	be.OnCommit(func() {
		s.mu.Lock()
		clear(s.buf)
		s.mu.Unlock()
	})
	if err := s.restore(); err != nil {
		return nil, err
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.watch.syncLoop(s.stop)
	}()
	return s, nil
}

// Close stops background work and waits for it. An unfinished compaction resumes when the
// store is opened again. Call before closing the backend.
func (s *Store) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.bg.Wait()
}

// Rev is the current revision.
func (s *Store) Rev() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.currentRev
}

// CompactRev is the latest compacted revision (-1 if none).
func (s *Store) CompactRev() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.compactRev
}

// RangeOptions narrow a range.
type RangeOptions struct {
	Limit int64
	Rev   int64
	Count bool
	// CountToLimit stops counting at Limit+1 keys (Count is then at most Limit+1): for a reader
	// that asks whether more keys follow, not how many.
	CountToLimit bool
}

// RangeResult is what a range found.
type RangeResult struct {
	KVs   []mvccpb.KeyValue
	Rev   int64
	Count int
	// LastKey is the last key read, set by RangeRecords (which leaves KVs empty).
	LastKey []byte
}

// Range reads keys [key, end) at a revision (0: current). end nil: key alone; end empty: to the end.
func (s *Store) Range(key, end []byte, ro RangeOptions) (*RangeResult, error) {
	v := s.Read()
	defer v.End()
	return v.Range(key, end, ro)
}

// decodeInto decodes a range's records into its result's key-values (copies: the records may
// lie in the database's memory map).
func decodeInto(res *RangeResult, krs []keyRev, vals [][]byte) error {
	res.KVs = make([]mvccpb.KeyValue, len(krs))
	if i, err := decodeKVs(vals, res.KVs); err != nil {
		return fmt.Errorf("mvcc: decode revision %d_%d: %w", krs[i].rev.Main, krs[i].rev.Sub, err)
	}
	return nil
}

// readableRev is the revision a read asks for (0: curRev), or why it cannot be read: a future
// or a compacted one.
func (s *Store) readableRev(rev, curRev int64) (int64, error) {
	if rev > curRev {
		return 0, ErrFutureRev
	}
	if rev <= 0 {
		rev = curRev
	}
	if rev < s.compactRev {
		return 0, ErrCompacted
	}
	return rev, nil
}

// keyRevisions is key's create and mod revisions and version at rev, from the index alone.
func (s *Store) keyRevisions(key []byte, rev int64) (create, mod, version int64, ok bool) {
	m, c, v, err := s.idx.get(key, rev)
	if err != nil {
		return 0, 0, 0, false
	}
	return c.Main, m.Main, v, true
}

// revisions is the index's revisions for a range, with the count carried from the previous page
// when the range is the next page of one read in a view (a write transaction's own revision is
// still changing, so its counts are neither taken nor kept).
func (s *Store) revisions(out []keyRev, key, end []byte, rev int64, ro RangeOptions, inView bool) ([]keyRev, int) {
	limit := int(ro.Limit)
	if ro.CountToLimit || !inView || limit <= 0 || end == nil {
		return s.idx.revisions(out, key, end, rev, limit, !ro.CountToLimit)
	}
	var krs []keyRev
	total, ok := s.pages.take(pageStart{key: string(key), end: string(end), rev: rev})
	if ok {
		krs, _ = s.idx.revisions(out, key, end, rev, limit, false)
	} else {
		krs, total = s.idx.revisions(out, key, end, rev, limit, true)
	}
	if n := len(krs); n > 0 && total > n {
		next := string(krs[n-1].key) + "\x00"
		s.pages.put(pageStart{key: next, end: string(end), rev: rev}, total-n)
	}
	return krs, total
}

// recordsLocked finds what a range reads and calls fn with the stored record of every key-value
// (valid only during fn: they may point into the database's memory map) in key order, and the
// result so far. tx is the write transaction the caller's write holds, with mu.
func (s *Store) recordsLocked(key, end []byte, ro RangeOptions, curRev int64, tx *bolt.Tx, fn func(res *RangeResult, krs []keyRev, vals [][]byte) error) (*RangeResult, error) {
	res, sc, err := s.lookUp(key, end, ro, curRev, false)
	if sc == nil {
		return res, err
	}
	defer s.putScratch(sc)
	if err := s.fetch(tx, sc); err != nil {
		return res, err
	}
	return res, fn(res, sc.krs, sc.vals)
}

// records is recordsLocked for a read view: the index and the unwritten values are read under
// mu with the backend's read transaction pinned, and the records are fetched and fn runs after
// mu is let go, so the apply loop's writes do not wait for a long read.
func (s *Store) records(key, end []byte, ro RangeOptions, curRev int64, fn func(res *RangeResult, krs []keyRev, vals [][]byte) error) (*RangeResult, error) {
	s.mu.RLock()
	res, sc, err := s.lookUp(key, end, ro, curRev, true)
	if sc == nil {
		s.mu.RUnlock()
		return res, err
	}
	defer s.putScratch(sc)
	missing := false
	var kb [schema.RevisionKeyLen]byte
	for i, kr := range sc.krs {
		v := s.buf[string(schema.AppendRevisionKey(kb[:0], kr.rev, false))]
		sc.vals[i] = v
		missing = missing || v == nil
	}
	if !missing {
		s.mu.RUnlock()
		return res, fn(res, sc.krs, sc.vals)
	}
	// Pinned under mu: the transaction and buf together hold every value (a commit clears buf
	// under mu after the transaction it retires).
	p, err := s.be.Pin()
	s.mu.RUnlock()
	if err != nil {
		return res, err
	}
	defer p.Release()
	return res, p.Do(func(tx *bolt.Tx) error {
		if err := s.fetch(tx, sc); err != nil {
			return err
		}
		return fn(res, sc.krs, sc.vals)
	})
}

// lookUp checks the revision a range reads and takes its revisions from the index, into a
// scratch with room for their values. No scratch when there is nothing to fetch: a count, an
// empty range, a refused revision. The caller holds mu.
func (s *Store) lookUp(key, end []byte, ro RangeOptions, curRev int64, inView bool) (*RangeResult, *readScratch, error) {
	rev, err := s.readableRev(ro.Rev, curRev)
	if err != nil {
		return &RangeResult{Rev: curRev}, nil, err
	}
	if ro.Count {
		return &RangeResult{Rev: curRev, Count: s.idx.count(key, end, rev)}, nil, nil
	}
	sc, _ := s.scratch.Get().(*readScratch)
	if sc == nil {
		sc = &readScratch{}
	}
	krs, total := s.revisions(sc.krs, key, end, rev, ro, inView)
	sc.krs = krs
	res := &RangeResult{Rev: curRev, Count: total}
	if len(krs) == 0 {
		s.putScratch(sc)
		return res, nil, nil
	}
	if cap(sc.vals) < len(krs) {
		sc.vals = make([][]byte, len(krs))
	}
	sc.vals = sc.vals[:len(krs)]
	clear(sc.vals)
	return res, sc, nil
}

// fetch fills the values sc lacks (nil) from tx.
func (s *Store) fetch(tx *bolt.Tx, sc *readScratch) error {
	// One cursor for every lookup: a Get per value builds a cursor of its own.
	c := tx.Bucket(schema.Key).Cursor()
	var kb [schema.RevisionKeyLen]byte
	var at []byte // the cursor's key (nil: not placed yet, or past the end)
	for i, kr := range sc.krs {
		if sc.vals[i] != nil {
			continue
		}
		rb := schema.AppendRevisionKey(kb[:0], kr.rev, false)
		k, v := recordAt(c, at, rb)
		if at = k; !bytes.Equal(k, rb) {
			return fmt.Errorf("mvcc: revision %d_%d of %q missing from backend", kr.rev.Main, kr.rev.Sub, kr.key)
		}
		sc.vals[i] = v
	}
	return nil
}

// recordAt moves c, which is at key at (nil: anywhere), to the record stored under rb, or where
// it would be, and returns the key there and its value. Keys written in key order have
// revisions that follow each other (in one transaction or the next), and so records that lie
// one after the other in the bucket: for those c steps to the next record first instead of
// searching from the root. (bbolt allocates for every page it visits: a paginated read of
// 100,000 objects made 9 MB of garbage by searching.) Records further apart are searched for,
// so a range whose keys were written in no order pays nothing for the try.
func recordAt(c *bolt.Cursor, at, rb []byte) (k, v []byte) {
	// rb > at, so the subtraction does not wrap.
	if len(at) >= 8 && bytes.Compare(rb, at) > 0 && binary.BigEndian.Uint64(rb)-binary.BigEndian.Uint64(at) <= 1 {
		if k, v = c.Next(); k == nil || bytes.Compare(k, rb) >= 0 {
			return k, v
		}
	}
	return c.Seek(rb)
}

// readScratch is a range's working memory: the index's revisions and the records they name.
// The pages of a paginated list and the chunks of a stream reuse it (each page of 500 made
// 30 KB of garbage of its own, 6 MB for a list of 100,000 objects).
type readScratch struct {
	krs  []keyRev
	vals [][]byte
}

// scratchKept is the most entries a readScratch may hold to be kept: a range larger than any
// page does not leave its memory behind.
const scratchKept = 4096

func (s *Store) putScratch(sc *readScratch) {
	if cap(sc.krs) > scratchKept || cap(sc.vals) > scratchKept {
		return
	}
	// Drop the references: keys the index may delete, records in a memory map that may move.
	clear(sc.krs)
	clear(sc.vals)
	s.scratch.Put(sc)
}

// TxnWrite is one write transaction: all its changes share one main revision.
type TxnWrite struct {
	s        *Store
	batch    *backend.BatchTx
	ownBatch bool  // Write locked the batch itself and must release it
	rev      int64 // the revision this transaction's changes get
	changes  []change
	// operation counts, for the metrics
	ranges, puts, deletes int
	putSize               int64
}

type change struct {
	kv        mvccpb.KeyValue
	tombstone bool
}

// Write starts a write transaction with a batch of its own. End must be called.
func (s *Store) Write() *TxnWrite {
	t := s.WriteIn(s.be.Batch())
	t.ownBatch = true
	return t
}

// WriteIn starts a write transaction inside a batch the caller holds (so the caller can add its
// own records, such as the consistent index, atomically). End must be called; the caller
// releases the batch.
func (s *Store) WriteIn(b *backend.BatchTx) *TxnWrite {
	s.mu.Lock()
	return &TxnWrite{s: s, batch: b, rev: s.currentRev + 1}
}

// Batch is the backend batch this transaction writes into.
func (t *TxnWrite) Batch() *backend.BatchTx { return t.batch }

// Rev is the revision reads in this transaction see.
func (t *TxnWrite) Rev() int64 {
	if len(t.changes) > 0 {
		return t.rev
	}
	return t.rev - 1
}

// CompactRev is the revision the store was compacted to (-1: never): reads below it fail.
func (t *TxnWrite) CompactRev() int64 { return t.s.compactRev }

// Range reads, seeing this transaction's own earlier changes.
func (t *TxnWrite) Range(key, end []byte, ro RangeOptions) (*RangeResult, error) {
	t.ranges++
	tx, err := t.batch.Tx()
	if err != nil {
		return nil, err
	}
	r, err := t.s.recordsLocked(key, end, ro, t.Rev(), tx, decodeInto)
	if r != nil {
		r.Rev = t.Rev()
	}
	return r, err
}

// KeyRevisions is what the index knows of key in the transaction: the create and mod
// revisions and the version its record carries, or !ok when it does not exist. A Txn's compare
// on those needs no read of the stored record (Kubernetes compares every update's mod revision).
func (t *TxnWrite) KeyRevisions(key []byte) (create, mod, version int64, ok bool) {
	t.ranges++ // counted as the range it replaces
	return t.s.keyRevisions(key, t.Rev())
}

// Put writes key=value with a lease (0: none).
func (t *TxnWrite) Put(key, value []byte, lease int64) error {
	s := t.s
	t.puts++
	t.putSize += int64(len(key) + len(value))
	rev := schema.Revision{Main: t.rev, Sub: int64(len(t.changes))}
	created, ver := rev, int64(1)
	if _, c, v, err := s.idx.get(key, t.rev); err == nil {
		created, ver = c, v+1
	}
	kv := mvccpb.KeyValue{Key: key, Value: value, CreateRevision: created.Main, ModRevision: t.rev, Version: ver, Lease: lease}
	if err := t.store(rev, false, &kv); err != nil {
		return err
	}
	s.idx.put(key, rev)
	t.changes = append(t.changes, change{kv: kv})
	if s.leases != nil {
		// The lessor knows which lease the key hangs on: no need to read the old value.
		if oldLease := s.leases.LeaseOf(key); oldLease != 0 && oldLease != lease {
			s.leases.Detach(oldLease, key)
		}
		if lease != 0 {
			s.leases.Attach(lease, key)
		}
	}
	return nil
}

// DeleteRange deletes live keys in [key, end) and returns how many it deleted.
func (t *TxnWrite) DeleteRange(key, end []byte) (int64, error) {
	t.deletes++
	krs, _ := t.s.idx.revisions(nil, key, end, t.rev, 0, true)
	for _, kr := range krs {
		rev := schema.Revision{Main: t.rev, Sub: int64(len(t.changes))}
		kv := mvccpb.KeyValue{Key: kr.key}
		if err := t.store(rev, true, &kv); err != nil {
			return 0, err
		}
		if err := t.s.idx.tombstone(kr.key, rev); err != nil {
			return 0, fmt.Errorf("mvcc: delete %q: %w", kr.key, err)
		}
		kv.ModRevision = t.rev
		t.changes = append(t.changes, change{kv: kv, tombstone: true})
		if t.s.leases != nil {
			if lease := t.s.leases.LeaseOf(kr.key); lease != 0 {
				t.s.leases.Detach(lease, kr.key)
			}
		}
	}
	return int64(len(krs)), nil
}

func (t *TxnWrite) store(rev schema.Revision, tombstone bool, kv *mvccpb.KeyValue) error {
	b, err := kv.Marshal()
	if err != nil {
		return fmt.Errorf("mvcc: encode: %w", err)
	}
	rb := schema.RevisionKey(rev, tombstone)
	// Revisions only grow: the key bucket is written in order.
	if err := t.batch.SeqPut(schema.Key, rb, b); err != nil {
		return err
	}
	t.s.buf[string(rb)] = b
	return nil
}

// Changes is the number of changes so far.
func (t *TxnWrite) Changes() int { return len(t.changes) }

// End publishes the transaction: the revision moves on if anything changed, and watchers hear.
func (t *TxnWrite) End() error {
	s := t.s
	s.metrics.txnEnded(t.ranges, t.puts, t.deletes, t.putSize)
	if len(t.changes) > 0 {
		// Upstream's write-back points: the transaction's writes become what readers see,
		// under the lock readers take (a sleep here holds every read, as upstream's does).
		failpoint.At(failpoint.BeforeWritebackBuf)
		s.currentRev = t.rev
		s.watch.notify(t.rev, t.changes)
		failpoint.At(failpoint.AfterWritebackBuf)
	}
	s.mu.Unlock()
	if t.ownBatch {
		return t.batch.Unlock()
	}
	return nil
}

// Abort ends a transaction whose changes must never be seen: the batch it wrote into is failed
// (its uncommitted writes discarded, no more taken; see backend.BatchTx.Fail) and watchers hear
// nothing. The in-memory index keeps what the transaction did, so the caller stops the member;
// a restart rebuilds everything from the database and replays the WAL.
func (t *TxnWrite) Abort(cause error) {
	t.batch.Fail(cause)
	t.s.mu.Unlock()
	if t.ownBatch {
		_ = t.batch.Unlock()
	}
}

// Compact discards revisions below rev (keeping each key's latest value at or below it). The
// index changes at once; the backend is cleaned in the background. The returned channel closes
// when the backend is clean.
func (s *Store) Compact(rev int64) (<-chan struct{}, error) {
	b := s.be.Batch()
	done, err := s.CompactIn(b, rev)
	if uerr := b.Unlock(); err == nil && uerr != nil {
		return nil, uerr
	}
	return done, err
}

// CompactIn is Compact inside a batch the caller holds.
func (s *Store) CompactIn(b *backend.BatchTx, rev int64) (<-chan struct{}, error) {
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	s.mu.Lock()
	if rev <= s.compactRev {
		s.mu.Unlock()
		return nil, ErrCompacted
	}
	if rev > s.currentRev {
		s.mu.Unlock()
		return nil, ErrFutureRev
	}
	failpoint.At(failpoint.CompactBeforeCommitScheduledCompact)
	if err := b.Put(schema.Meta, schema.MetaScheduledCompact, schema.RevisionKey(schema.Revision{Main: rev}, false)); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	failpoint.At(failpoint.CompactAfterCommitScheduledCompact)
	prev := s.compactRev
	prevFinished := s.finishedRev == prev
	s.compactRev = rev
	idx := s.idx
	s.mu.Unlock()
	s.watch.compacted(rev)
	done := make(chan struct{})
	if s.stepped {
		s.compactMu.Lock()
		s.queued = append(s.queued, &queuedCompaction{idx: idx, prev: prev, rev: rev, prevFinished: prevFinished, done: done})
		s.compactMu.Unlock()
		return done, nil
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.compactMu.Lock()
		defer s.compactMu.Unlock()
		keep, ok := s.compactIndex(idx, rev)
		if !ok {
			close(done) // the store was reloaded from a snapshot meanwhile: nothing to clean
			return
		}
		s.compactBackend(prev, rev, prevFinished, keep)
		// Not deferred: a compaction that panics (a failpoint, a damaged file) must not tell a
		// physical Compact waiting on done that it finished while the process dies, as upstream's
		// closes its channel only after a compaction that returned.
		close(done)
	}()
	return done, nil
}

// indexCompactionChunk is how many keys the index compaction handles per hold of the store's
// lock. The apply goroutine takes that lock once per entry, so each entry of an apply batch can
// wait for one chunk: chunks of 10,000 keys (8 ms each) delayed a batch of eight puts by 70 ms,
// and chunks of 1,000 (1-2 ms on a slow machine) still stalled every client 30-40 ms in a
// traced compaction of a million keys. 64 keys hold it for about a tenth of a millisecond.
const indexCompactionChunk = 64

// compactIndex drops idx's revisions that rev made unreachable, a chunk of keys at a time, and
// returns the revisions at or below rev the backend must keep. Reads and writes run between
// chunks; none can see the difference, as reads below rev are refused from the moment the
// compaction is scheduled and newer revisions are never dropped. false when the store's index
// was replaced (Reload) before the end.
func (s *Store) compactIndex(idx *treeIndex, rev int64) (map[schema.Revision]struct{}, bool) {
	start := time.Now()
	keep := make(map[schema.Revision]struct{})
	for from, done := []byte{}, false; !done; {
		s.mu.Lock()
		if s.idx != idx {
			s.mu.Unlock()
			return nil, false
		}
		from, done = idx.compactSome(rev, from, indexCompactionChunk, keep)
		s.mu.Unlock()
	}
	s.metrics.indexCompactionPauseMs.Observe(float64(time.Since(start)) / float64(time.Millisecond))
	return keep, true
}

// backendCompaction is one compaction's clean-up of the key bucket, a batch at a time, hashing
// what it reads as upstream's compaction does (prev is the compaction before).
type backendCompaction struct {
	prev, rev    int64
	prevFinished bool
	keep         map[schema.Revision]struct{}
	from, end    []byte
	hasher       *kvHasher
	started      time.Time
}

func newBackendCompaction(prev, rev int64, prevFinished bool, keep map[schema.Revision]struct{}) *backendCompaction {
	return &backendCompaction{prev: prev, rev: rev, prevFinished: prevFinished, keep: keep,
		from: schema.RevisionKey(schema.Revision{}, false), end: schema.RevisionKey(schema.Revision{Main: rev + 1}, false),
		hasher: newKVHasher(prev, rev, keep), started: time.Now()}
}

// compactBackend deletes unreachable revisions in small batches so writes keep flowing, pausing
// between batches as paced. The caller holds compactMu.
func (s *Store) compactBackend(prev, rev int64, prevFinished bool, keep map[schema.Revision]struct{}) {
	batchSize, pause := s.compactionPace()
	c := newBackendCompaction(prev, rev, prevFinished, keep)
	for {
		select {
		case <-s.stop:
			s.log.Info("compaction interrupted by shutdown; it resumes on restart", "revision", rev)
			return
		default:
		}
		if s.compactBatchOf(c, batchSize) {
			return
		}
		if pause > 0 {
			select {
			case <-time.After(pause):
			case <-s.stop:
			}
		}
	}
}

// compactBatchOf deletes one batch of c's unreachable revisions and commits it; true when c is
// finished (or failed, which it logs: the compaction resumes on restart). The caller holds
// compactMu.
func (s *Store) compactBatchOf(c *backendCompaction, batchSize int) bool {
	rev := c.rev
	batchStart := time.Now()
	b := s.be.Batch()
	failpoint.At(failpoint.CompactAfterAcquiredBatchTxLock)
	tx, err := b.Tx()
	if err != nil {
		b.Unlock()
		s.log.Error("compaction failed", "revision", rev, "error", err)
		return true
	}
	cur := tx.Bucket(schema.Key).Cursor()
	var del [][]byte
	var last []byte
	// A batch scans at most batchSize revisions, kept or not (as upstream's): counting only
	// deletions, the last batch walked every kept revision after the last deleted one (a
	// million in one hold of the batch lock).
	scanned := 0
	for k, v := cur.Seek(c.from); k != nil && bytes.Compare(k, c.end) < 0 && scanned < batchSize; k, v = cur.Next() {
		scanned++
		last = append([]byte(nil), k...)
		c.hasher.write(k, v)
		r, _, err := schema.ParseRevisionKey(k)
		if err != nil {
			continue
		}
		if _, ok := c.keep[r]; !ok {
			del = append(del, last)
		}
	}
	for _, k := range del {
		if err = b.Delete(schema.Key, k); err != nil {
			break
		}
	}
	finished := scanned < batchSize
	if finished && err == nil {
		failpoint.At(failpoint.CompactBeforeSetFinishedCompact)
		err = b.Put(schema.Meta, schema.MetaFinishedCompact, schema.RevisionKey(schema.Revision{Main: rev}, false))
		failpoint.At(failpoint.CompactAfterSetFinishedCompact)
	}
	failpoint.At(failpoint.CompactBeforeCommitBatch)
	uerr := b.Unlock()
	if err != nil || uerr != nil {
		s.log.Error("compaction failed", "revision", rev, "error", errors.Join(err, uerr))
		return true
	}
	if !finished {
		// Each batch's deletes are committed at once, as upstream does: left in the write
		// batch they piled up into one commit of 10,000 deletes that held every write (and,
		// through the backend's lock, reads) for half a second.
		if err := s.be.Commit(); err != nil {
			s.log.Error("compaction failed", "revision", rev, "error", err)
			return true
		}
	}
	failpoint.At(failpoint.CompactAfterCommitBatch)
	s.metrics.compactionPauseMs.Observe(float64(time.Since(batchStart)) / float64(time.Millisecond))
	s.metrics.compactionKeys.Add(float64(len(del)))
	if !finished {
		c.from = append(last, 0)
		return false
	}
	s.metrics.compactionTotalMs.Observe(float64(time.Since(c.started)) / float64(time.Millisecond))
	s.metrics.compactionLast.Set(float64(time.Now().Unix()))
	sum := c.hasher.h.Sum32()
	s.mu.Lock()
	s.finishedRev = rev
	s.mu.Unlock()
	s.log.Info("finished scheduled compaction", "compact-revision", rev, "hash", sum)
	if c.prevFinished {
		s.compactHashes.add(CompactHash{Hash: sum, CompactRevision: c.prev, Revision: rev})
	} else {
		// It did not read what the interrupted one before it deleted: its hash would
		// not match the other members' (upstream skips it too).
		s.log.Info("previous compaction was interrupted, skip storing compaction hash value")
	}
	return true
}

// queuedCompaction is a compaction scheduled on a stepped store, waiting for its caller's steps.
type queuedCompaction struct {
	idx          *treeIndex
	prev, rev    int64
	prevFinished bool
	done         chan struct{}
	backend      *backendCompaction // nil until the index is compacted
}

// Stepped hands the store's compactions to its caller: each scheduled compaction waits for
// StepCompaction instead of running in a goroutine paced by the wall clock (the stepped
// simulation paces them by its own clock). Call before the first compaction.
func (s *Store) Stepped() { s.stepped = true }

// StepCompaction takes one step of the oldest compaction a stepped store has waiting: its index
// compaction, or one batch of its backend clean-up (the pace's batch size). It reports whether
// compactions still wait.
func (s *Store) StepCompaction() bool {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	if len(s.queued) == 0 {
		return false
	}
	q := s.queued[0]
	finished := false
	if q.backend == nil {
		keep, ok := s.compactIndex(q.idx, q.rev)
		if ok {
			q.backend = newBackendCompaction(q.prev, q.rev, q.prevFinished, keep)
		} else {
			finished = true // the store was reloaded from a snapshot meanwhile: nothing to clean
		}
	} else {
		batch, _ := s.compactionPace()
		finished = s.compactBatchOf(q.backend, batch)
	}
	if finished {
		close(q.done)
		s.queued = s.queued[1:]
	}
	return len(s.queued) > 0
}

// SetCompactionPace sets how many revisions a compaction deletes per batch and the pause
// between batches (--compaction-batch-limit, --compaction-sleep-interval).
func (s *Store) SetCompactionPace(batch int, pause time.Duration) {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	if batch <= 0 {
		batch = defaultCompactionBatch
	}
	s.compactBatch, s.compactPause = batch, pause
}

// defaultCompactionBatch is upstream's --compaction-batch-limit default.
const defaultCompactionBatch = 1000

// compactionPace is called with compactMu held.
func (s *Store) compactionPace() (int, time.Duration) {
	if s.compactBatch <= 0 {
		return defaultCompactionBatch, s.compactPause
	}
	return s.compactBatch, s.compactPause
}

// HashKV hashes the keys and values visible at rev that compaction at the current compact
// revision keeps, so members at the same revision agree. rev 0 means current. It returns the
// revision hashed and the store's current one.
func (s *Store) HashKV(rev int64) (hash uint32, hashRev, curRev, compactRev int64, err error) {
	start := time.Now()
	defer func() {
		if err == nil {
			s.metrics.hashRev.Observe(time.Since(start).Seconds())
		}
	}()
	if err := s.be.Commit(); err != nil {
		return 0, 0, 0, 0, err
	}
	s.mu.RLock()
	cur, compactRev := s.currentRev, s.compactRev
	if rev <= 0 {
		rev = cur
	}
	if ch, ok := s.compactHashes.at(rev); ok {
		// a recent compaction's own hash, as upstream answers at its revision (even one
		// a later compaction passed)
		s.mu.RUnlock()
		return ch.Hash, ch.Revision, cur, ch.CompactRevision, nil
	}
	if rev > cur {
		s.mu.RUnlock()
		return 0, 0, cur, compactRev, ErrFutureRev
	}
	if rev < compactRev {
		s.mu.RUnlock()
		return 0, 0, cur, compactRev, ErrCompacted
	}
	keep := s.idx.keep(rev)
	s.mu.RUnlock()
	h := newKVHasher(compactRev, rev, keep)
	upper := schema.RevisionKey(schema.Revision{Main: rev + 1}, false)
	err = s.be.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(schema.Key).Cursor()
		for k, v := c.First(); k != nil && bytes.Compare(k, upper) < 0; k, v = c.Next() {
			h.write(k, v)
		}
		return nil
	})
	return h.h.Sum32(), rev, cur, compactRev, err
}

// KeyCount is the number of live keys (for metrics).
func (s *Store) KeyCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	s.idx.tree.Scan(func(ki *keyIndex) bool {
		if ki.isLive() {
			n++
		}
		return true
	})
	return n
}

// Event is one change seen by a watcher.
type Event struct {
	Type mvccpb.Event_EventType
	KV   mvccpb.KeyValue
}

// eventsBetween returns the changes with main revision in [from, to] whose keys want takes, in
// order. Only those are copied out and decoded (into one buffer they share): the watchers a
// catch-up serves mostly watch a few prefixes, and decoding every change (a lease renewal, an
// event) for them was most of the catch-up's work while it kept writers waiting. Caller holds
// mu.
func (s *Store) eventsBetween(from, to int64, want func(key []byte) bool) ([]Event, error) {
	lo := schema.RevisionKey(schema.Revision{Main: from}, false)
	hi := schema.RevisionKey(schema.Revision{Main: to + 1}, false)
	type rec struct {
		rev  schema.Revision
		tomb bool
		v    []byte // the stored record: in the write buffer or the database's memory map
	}
	var recs []rec
	var inBuf map[schema.Revision]bool // the write buffer's changes, newer than the database's
	take := func(k, v []byte) error {
		rev, tomb, err := schema.ParseRevisionKey(k)
		if err != nil {
			return err
		}
		if inBuf[rev] {
			return nil
		}
		var kv mvccpb.KeyValue
		if err := decodeKV(v, &kv); err != nil {
			return fmt.Errorf("mvcc: decode revision %d_%d: %w", rev.Main, rev.Sub, err)
		}
		if want(kv.Key) {
			recs = append(recs, rec{rev, tomb, v})
		}
		return nil
	}
	for k, v := range s.buf {
		kb := []byte(k)
		if bytes.Compare(kb, lo) >= 0 && bytes.Compare(kb, hi) < 0 {
			if err := take(kb, v); err != nil {
				return nil, err
			}
		}
	}
	if len(recs) > 0 {
		inBuf = make(map[schema.Revision]bool, len(recs))
		for _, r := range recs {
			inBuf[r.rev] = true
		}
	}
	var evs []Event
	err := s.be.Read(func(tx *bolt.Tx) error {
		c := tx.Bucket(schema.Key).Cursor()
		for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) < 0; k, v = c.Next() {
			if err := take(k, v); err != nil {
				return err
			}
		}
		// Decoded inside the transaction: the records point into its memory map.
		slices.SortFunc(recs, func(a, b rec) int {
			return cmp.Or(cmp.Compare(a.rev.Main, b.rev.Main), cmp.Compare(a.rev.Sub, b.rev.Sub))
		})
		vals := make([][]byte, len(recs))
		for i, r := range recs {
			vals[i] = r.v
		}
		kvs := make([]mvccpb.KeyValue, len(recs))
		if i, err := decodeKVs(vals, kvs); err != nil {
			return fmt.Errorf("mvcc: decode revision %d_%d: %w", recs[i].rev.Main, recs[i].rev.Sub, err)
		}
		evs = make([]Event, len(recs))
		for i, r := range recs {
			evs[i].KV = kvs[i]
			if r.tomb {
				evs[i].Type = mvccpb.DELETE
				evs[i].KV.ModRevision = r.rev.Main
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// TxnRead is a consistent read-only view at the revision current when it began.
type TxnRead struct {
	s      *Store
	rev    int64
	ranges int
}

// Read opens a read view; End must be called. Compactions wait while views are open (writes
// do not), so keep them short.
func (s *Store) Read() *TxnRead {
	s.viewMu.RLock()
	s.metrics.openReads.Add(1)
	s.mu.RLock()
	rev := s.currentRev
	s.mu.RUnlock()
	return &TxnRead{s: s, rev: rev}
}

// Rev is the revision the view reads at.
func (t *TxnRead) Rev() int64 { return t.rev }

// CompactRev is the revision the store was compacted to (-1: never): reads below it fail.
func (t *TxnRead) CompactRev() int64 { return t.s.CompactRev() }

// KeyRevisions is TxnWrite.KeyRevisions in the view.
func (t *TxnRead) KeyRevisions(key []byte) (create, mod, version int64, ok bool) {
	t.ranges++
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	return t.s.keyRevisions(key, t.rev)
}

// Range reads in the view.
func (t *TxnRead) Range(key, end []byte, ro RangeOptions) (*RangeResult, error) {
	t.ranges++
	return t.s.records(key, end, ro, t.rev, decodeInto)
}

// RangeRecords is Range for a caller that sends key-values on as they are stored (their
// encoding is the API's KeyValue message): fn gets the stored records, in key order, valid only
// during fn. Each is checked to decode first, so a damaged record fails the range as it fails
// Range. The result carries no KVs; LastKey is the key of the last record.
func (t *TxnRead) RangeRecords(key, end []byte, ro RangeOptions, fn func(recs [][]byte) error) (*RangeResult, error) {
	t.ranges++
	return t.s.records(key, end, ro, t.rev, func(res *RangeResult, krs []keyRev, vals [][]byte) error {
		var kv mvccpb.KeyValue
		for i, v := range vals {
			if err := decodeKV(v, &kv); err != nil {
				return fmt.Errorf("mvcc: decode revision %d_%d: %w", krs[i].rev.Main, krs[i].rev.Sub, err)
			}
		}
		res.LastKey = bytes.Clone(krs[len(krs)-1].key)
		return fn(vals)
	})
}

// PageCount is the Count of a range [key, end) at rev read in chunks: sent keys were read
// from key on, and the rest start at next. When the range is the next page of a paginated read
// its count is carried from the page before (see pageCounts); otherwise the keys from next on
// are counted. Either way the page that would start at next gets what is left after this one,
// so a list of N keys read page by page walks the index about once, not once per page. rev is
// a revision the chunks were read at (so neither future nor compacted when they were).
func (t *TxnRead) PageCount(key, next, end []byte, rev int64, sent int) (int, error) {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	if _, err := t.s.readableRev(rev, t.rev); err != nil {
		return 0, err
	}
	total, ok := t.s.pages.take(pageStart{key: string(key), end: string(end), rev: rev})
	if !ok {
		total = sent + t.s.idx.count(next, end, rev)
	}
	t.s.pages.put(pageStart{key: string(next), end: string(end), rev: rev}, total-sent)
	return total, nil
}

// End closes the view.
func (t *TxnRead) End() {
	t.s.metrics.openReads.Add(-1)
	t.s.metrics.txnEnded(t.ranges, 0, 0, 0)
	t.s.viewMu.RUnlock()
}

// Reload rebuilds the store from the backend after its file was replaced (a snapshot from the
// leader). Every watcher falls back to catching up from the new history.
func (s *Store) Reload() error {
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx = newTreeIndex()
	s.pages.clear()
	clear(s.buf)
	s.currentRev, s.compactRev = 1, -1
	if err := s.restore(); err != nil {
		return err
	}
	s.watch.mu.Lock()
	for w := range s.watch.watchers {
		w.synced = false
	}
	s.watch.mu.Unlock()
	s.watch.kick()
	return nil
}
