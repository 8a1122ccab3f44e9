package mvcc

import (
	"bytes"
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"

	"etcdx/server/schema"
)

// maxRestoreScans bounds how many goroutines read the key bucket at once when the index is
// rebuilt; minRevsPerScan keeps a small store in one.
const (
	maxRestoreScans = 8
	minRevsPerScan  = 64 << 10
)

// restore rebuilds the index, the current and compacted revisions and the keys' leases from
// the backend. It finishes a compaction a crash interrupted.
//
// The key bucket is in revision order, the index in key order. Rather than looking every
// revision up in the index (two tree walks each, on one CPU), the bucket is cut into revision
// ranges scanned at once, each scan's records sorted by key, and the sorted scans merged into
// the index key by key, in the order the tree is built fastest.
func (s *Store) restore() error {
	var scheduled, finished int64 = -1, -1
	var first, last int64 // the key bucket's lowest and highest main revisions
	err := s.be.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(schema.Meta)
		if v := meta.Get(schema.MetaFinishedCompact); v != nil {
			r, _, err := schema.ParseRevisionKey(v)
			if err != nil {
				return err
			}
			finished = r.Main
		}
		if v := meta.Get(schema.MetaScheduledCompact); v != nil {
			r, _, err := schema.ParseRevisionKey(v)
			if err != nil {
				return err
			}
			scheduled = r.Main
		}
		c := tx.Bucket(schema.Key).Cursor()
		if k, _ := c.First(); k != nil {
			lo, _, err := schema.ParseRevisionKey(k)
			if err != nil {
				return err
			}
			k, _ = c.Last()
			hi, _, err := schema.ParseRevisionKey(k)
			if err != nil {
				return err
			}
			first, last = lo.Main, hi.Main
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mvcc: restore: %w", err)
	}
	if err := s.restoreIndex(first, last, restoreScans(first, last)); err != nil {
		return fmt.Errorf("mvcc: restore: %w", err)
	}

	s.compactRev, s.finishedRev = finished, finished
	if s.compactRev > s.currentRev {
		s.currentRev = s.compactRev
	}
	if scheduled > finished {
		// A compaction was interrupted: finish it.
		s.log.Info("resuming interrupted compaction", "revision", scheduled)
		s.compactRev = scheduled
		keep := s.idx.compact(scheduled)
		s.compactMu.Lock()
		s.compactBackend(finished, scheduled, false, keep)
		s.compactMu.Unlock()
	}
	return nil
}

// restoreRec is one record of the key bucket as the index needs it: no value. Its key is at
// [off, off+klen) of its scan's arena, so a scan's records hold no pointer for the GC to follow.
type restoreRec struct {
	main, sub int64
	created   int64
	ver       int64
	lease     int64
	off       int64
	klen      int32
	tomb      bool
}

// restoreScan holds the records of one revision range of the key bucket, sorted by key and,
// for one key, by revision.
type restoreScan struct {
	arena  []byte
	recs   []restoreRec
	maxRev int64 // the highest main revision read, revision markers included
}

func (sc *restoreScan) key(r *restoreRec) []byte { return sc.arena[r.off : r.off+int64(r.klen)] }

// restoreScans is how many ranges the key bucket's main revisions [first, last] are read in at
// once: one per CPU the process may use, none smaller than minRevsPerScan revisions.
func restoreScans(first, last int64) int {
	n := int64(min(runtime.GOMAXPROCS(0), maxRestoreScans))
	return int(max(min(n, (last-first+1)/minRevsPerScan), 1))
}

// restoreIndex builds the index from the key bucket's main revisions [first, last], read in n
// ranges at once, each in a read transaction of its own.
func (s *Store) restoreIndex(first, last int64, ranges int) error {
	n := int64(ranges)
	scans := make([]*restoreScan, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		from, to := first+(last-first+1)*i/n, first+(last-first+1)*(i+1)/n
		wg.Go(func() {
			scans[i], errs[i] = s.scanRevisions(from, to)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	s.indexScans(scans)
	return nil
}

// scanRevisions reads the records of main revisions [from, to) and sorts them by key. A first
// pass counts them and their keys' bytes, so each scan allocates its records once: growing
// slices of hundreds of megabytes cost more than the second walk over the cursor.
func (s *Store) scanRevisions(from, to int64) (*restoreScan, error) {
	sc := &restoreScan{}
	err := s.be.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(schema.Key).Cursor()
		start := schema.RevisionKey(schema.Revision{Main: from}, false)
		end := schema.RevisionKey(schema.Revision{Main: to}, false)
		recs, keyBytes := 0, 0
		for k, v := c.Seek(start); k != nil && bytes.Compare(k, end) < 0; k, v = c.Next() {
			recs++
			keyBytes += encodedKeyLen(v)
		}
		sc.recs = make([]restoreRec, 0, recs)
		sc.arena = make([]byte, 0, keyBytes)
		var kv mvccpb.KeyValue
		for k, v := c.Seek(start); k != nil && bytes.Compare(k, end) < 0; k, v = c.Next() {
			rev, tomb, err := schema.ParseRevisionKey(k)
			if err != nil {
				return err
			}
			sc.maxRev = max(sc.maxRev, rev.Main)
			if err := decodeKV(v, &kv); err != nil {
				return fmt.Errorf("value at revision %d_%d: %w", rev.Main, rev.Sub, err)
			}
			if len(kv.Key) == 0 {
				// A revision marker with no key (snapshot restore --bump-revision): it only moves
				// the current revision; the scheduled compaction written with it removes it.
				continue
			}
			sc.recs = append(sc.recs, restoreRec{main: rev.Main, sub: rev.Sub, created: kv.CreateRevision, ver: kv.Version,
				lease: kv.Lease, off: int64(len(sc.arena)), klen: int32(len(kv.Key)), tomb: tomb})
			sc.arena = append(sc.arena, kv.Key...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(sc.recs, func(a, b restoreRec) int {
		if c := bytes.Compare(sc.key(&a), sc.key(&b)); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.main, b.main), cmp.Compare(a.sub, b.sub))
	})
	return sc, nil
}

// encodedKeyLen is the length of the key in an encoded KeyValue that starts with it, as every
// writer's encoding does; 0 when it does not (the arena then grows as it must).
func encodedKeyLen(v []byte) int {
	num, typ, n := protowire.ConsumeTag(v)
	if n < 0 || num != kvKey || typ != protowire.BytesType {
		return 0
	}
	l, m := protowire.ConsumeVarint(v[n:])
	if m < 0 {
		return 0
	}
	return int(min(l, uint64(len(v))))
}

// indexScans merges the sorted scans into the index in key order. The key space is cut into
// as many parts as there are scans; each part's entries are made in a goroutine of its own
// and loaded into the tree, part after part, in batches as they come.
func (s *Store) indexScans(scans []*restoreScan) {
	parts := splitScans(scans, len(scans))
	made := make([]chan []*keyIndex, len(parts))
	leases := make([][]keyLease, len(parts))
	for p, bounds := range parts {
		// Room for every batch: a part made before the one loaded now must not wait for it.
		recs := 0
		for _, b := range bounds {
			recs += b[1] - b[0]
		}
		made[p] = make(chan []*keyIndex, recs/mergeBatch+1)
		go func() {
			defer close(made[p])
			leases[p] = mergeScans(scans, bounds, made[p])
		}()
	}
	for _, ch := range made {
		for batch := range ch {
			for _, ki := range batch {
				s.idx.tree.Load(ki)
			}
		}
	}
	if s.leases != nil {
		for _, part := range leases {
			for _, kl := range part {
				s.leases.Attach(kl.lease, kl.key)
			}
		}
	}
	for _, sc := range scans {
		s.currentRev = max(s.currentRev, sc.maxRev)
	}
}

// mergeBatch is how many index entries a part hands to the tree at once.
const mergeBatch = 4096

// keyLease is a key and the lease it is attached to.
type keyLease struct {
	key   []byte
	lease int64
}

// scanBounds is, for each scan, the records [lo, hi) of one part of the key space.
type scanBounds [][2]int

// splitScans cuts the scans' key space into up to n parts of about the same number of records,
// at quantiles of keys sampled from every scan (a scan's keys may all lie on one side).
func splitScans(scans []*restoreScan, n int) []scanBounds {
	const perScan = 64
	type sample struct {
		key    []byte
		weight int
	}
	var samples []sample
	total := 0
	for _, sc := range scans {
		total += len(sc.recs)
		for j := range perScan {
			lo, hi := len(sc.recs)*j/perScan, len(sc.recs)*(j+1)/perScan
			if hi > lo {
				samples = append(samples, sample{key: sc.key(&sc.recs[lo]), weight: hi - lo})
			}
		}
	}
	slices.SortFunc(samples, func(a, b sample) int { return bytes.Compare(a.key, b.key) })
	var splits [][]byte
	seen := 0
	for _, sm := range samples {
		if len(splits) < n-1 && seen >= total*(len(splits)+1)/n {
			splits = append(splits, sm.key)
		}
		seen += sm.weight
	}
	var parts []scanBounds
	lo := make([]int, len(scans))
	for p := 0; p <= len(splits); p++ {
		hi := make([]int, len(scans))
		for i, sc := range scans {
			hi[i] = len(sc.recs)
			if p < len(splits) {
				hi[i] = lo[i] + sort.Search(len(sc.recs)-lo[i], func(j int) bool {
					return bytes.Compare(sc.key(&sc.recs[lo[i]+j]), splits[p]) >= 0
				})
			}
		}
		part := make(scanBounds, len(scans))
		for i := range scans {
			part[i] = [2]int{lo[i], hi[i]}
		}
		parts = append(parts, part)
		lo = hi
	}
	return parts
}

// mergeScans makes the index entries of one part of the key space in key order and sends them
// to out in batches: for each key, its records from every scan in revision order (the scans
// cover ascending revision ranges). It returns the keys attached to leases: a key's lease is
// the one its last record names, unless that record deletes it.
func mergeScans(scans []*restoreScan, bounds scanBounds, out chan<- []*keyIndex) []keyLease {
	var leases []keyLease
	batch := make([]*keyIndex, 0, mergeBatch)
	pos := make([]int, len(scans))
	for i := range scans {
		pos[i] = bounds[i][0]
	}
	for {
		var key []byte
		for i, sc := range scans {
			if pos[i] < bounds[i][1] {
				if k := sc.key(&sc.recs[pos[i]]); key == nil || bytes.Compare(k, key) < 0 {
					key = k
				}
			}
		}
		if key == nil {
			break
		}
		var ki *keyIndex
		var lastRec restoreRec
		for i, sc := range scans {
			for ; pos[i] < bounds[i][1] && bytes.Equal(sc.key(&sc.recs[pos[i]]), key); pos[i]++ {
				r := sc.recs[pos[i]]
				rev := schema.Revision{Main: r.main, Sub: r.sub}
				switch {
				case r.tomb && ki == nil:
					// Only the deletion is left: a compaction at its revision keeps it (watchers
					// from there see it), and the next one removes it, as upstream's.
					ki = newKeyIndex(key, rev, schema.Revision{}, 1)
					ki.generations = append(ki.generations, generation{})
				case r.tomb:
					if ki.isLive() {
						_ = ki.tombstone(rev)
					}
				case ki == nil:
					ki = newKeyIndex(key, rev, schema.Revision{Main: r.created}, r.ver)
				default:
					ki.restore(rev, schema.Revision{Main: r.created}, r.ver)
				}
				lastRec = r
			}
		}
		if ki == nil {
			continue
		}
		if !lastRec.tomb && lastRec.lease != 0 {
			leases = append(leases, keyLease{key: ki.key, lease: lastRec.lease})
		}
		if batch = append(batch, ki); len(batch) == mergeBatch {
			out <- batch
			batch = make([]*keyIndex, 0, mergeBatch)
		}
	}
	if len(batch) > 0 {
		out <- batch
	}
	return leases
}
