package backend

// Defragmentation without stopping writes. Upstream rewrites the file while holding the batch
// lock, so every write waits for the whole copy (etcd-io/etcd#9222). Here the copy is read from
// a read transaction while writes go on into the old file; every write made meanwhile is also
// recorded, replayed onto the copy in rounds, and only the last few (at most defragFinalWrites)
// are replayed with writes held, just before the copy is renamed over the old file. Until that
// rename the old file is complete and current; after it the copy is, synced first. Either is
// what a crash leaves, and the WAL replays what the backend had not committed, as after any
// crash between commits.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
	bolt "go.etcd.io/bbolt"

	"etcdx/server/failpoint"
	"etcdx/server/fileutil"
)

const (
	// defragSuffix names the copy next to the file: db.defrag.
	defragSuffix = ".defrag"
	// defragTxBytes bounds one write transaction of the copy, and so the copy's data not yet on
	// disk: each commit is synced. On ext4 (data=ordered) a WAL fsync waits for every file's
	// dirty data in the journal's transaction; a copy whose dirty pages pile up (a gigabyte
	// before one final sync) made those fsyncs, and the writes behind them, wait a hundred
	// milliseconds and more (docs/performance.md).
	defragTxBytes = 4 << 20
	// defragFillPercent packs the copy's pages as upstream's defrag does (keys arrive in order).
	defragFillPercent = 0.9
	// seqFillPercent is how full SeqPut leaves a page it splits (upstream's for sequential puts).
	seqFillPercent = 0.9
	// defragFinalWrites is how many recorded writes may be left for the step writes wait for.
	defragFinalWrites = 2000
	// defragRounds bounds the catch-up rounds: under writes faster than the copy takes them the
	// last round replays whatever is left with writes held.
	defragRounds = 16
	// defragAttempts bounds the copies started again because the storage was migrated meanwhile.
	defragAttempts = 3
)

var (
	errReplaced = errors.New("the file was replaced by a snapshot from the leader")
	errClosing  = errors.New("the backend is closing")
	// errRawWrite: a write through WritableTx (a storage migration) cannot be replayed.
	errRawWrite = errors.New("the storage was migrated during the copy")
	errStopped  = errors.New("stopped")
)

// defragLog records the writes made while Defrag copies the file. The batch's holder appends;
// Defrag takes what was recorded under the same lock (batchMu).
type defragLog struct {
	writes   []loggedWrite
	rawWrite bool
	// stopped says why the copy must be given up (a replacement, a close); stop mirrors it for
	// the copy, which runs without batchMu.
	stopped error
	stop    atomic.Bool
}

type loggedWrite struct {
	bucket, key, value []byte
	del                bool
}

// record keeps copies: the caller's slices are only promised until its transaction commits.
func (d *defragLog) record(bucket, key, value []byte, del bool) {
	w := loggedWrite{bucket: bytes.Clone(bucket), key: bytes.Clone(key), del: del}
	if !del {
		w.value = bytes.Clone(value)
	}
	d.writes = append(d.writes, w)
}

// stopDefragLocked makes a running Defrag give up its copy. The caller holds batchMu.
func (b *Backend) stopDefragLocked(why error) {
	if d := b.defrag; d != nil && d.stopped == nil {
		d.stopped = why
		d.stop.Store(true)
	}
}

// removeStaleDefragCopy deletes the copy a crash left behind: the file in place is the one in use.
func (b *Backend) removeStaleDefragCopy() {
	path := b.cfg.Path + defragSuffix
	if err := os.Remove(path); err == nil {
		b.log.Info("removed the copy of an unfinished defragmentation", "path", path)
	}
}

// defragResult is what one defragmentation did, for its log line.
type defragResult struct {
	rounds   int           // catch-up rounds run while writes went on
	replayed int           // writes recorded during the copy and replayed onto it
	held     time.Duration // how long writes waited: the final replay, sync and swap
}

// Defrag rewrites the file without free pages. Writes and reads go on while the copy is made;
// writes wait only for the final step (the last recorded writes, a sync and a rename). One
// Defrag runs at a time.
func (b *Backend) Defrag() error {
	b.defragMu.Lock()
	defer b.defragMu.Unlock()
	if b.closing.Load() {
		return fmt.Errorf("backend: defrag: %w", errClosing)
	}
	start := time.Now()
	b.m.defragInflight.Store(1)
	defer func() {
		b.m.defragInflight.Store(0)
		b.m.defrag.Observe(time.Since(start).Seconds())
	}()
	size1, inUse1 := b.Size(), b.SizeInUse()
	b.log.Info("defragmenting", "path", b.cfg.Path, "current-db-size-bytes", size1, "current-db-size", humanize.Bytes(uint64(size1)),
		"current-db-size-in-use-bytes", inUse1, "current-db-size-in-use", humanize.Bytes(uint64(inUse1)))
	for attempt := 1; ; attempt++ {
		res, err := b.defragOnce()
		if errors.Is(err, errRawWrite) && attempt < defragAttempts {
			b.log.Info("the storage was migrated during the defragmentation; copying again", "attempt", attempt)
			continue
		}
		if err != nil {
			return fmt.Errorf("backend: defrag: %w", err)
		}
		// Upstream's line and fields; the last three are ours (how long writes waited).
		size2, inUse2 := b.Size(), b.SizeInUse()
		b.log.Info("finished defragmenting directory", "path", b.cfg.Path,
			"current-db-size-bytes-diff", size2-size1, "current-db-size-bytes", size2, "current-db-size", humanize.Bytes(uint64(size2)),
			"current-db-size-in-use-bytes-diff", inUse2-inUse1, "current-db-size-in-use-bytes", inUse2, "current-db-size-in-use", humanize.Bytes(uint64(inUse2)),
			"took", time.Since(start), "writes-held", res.held, "catch-up-rounds", res.rounds, "replayed-writes", res.replayed)
		return nil
	}
}

// defragOnce copies the file once and swaps the copy in.
func (b *Backend) defragOnce() (defragResult, error) {
	run, err := b.startDefrag()
	if err != nil {
		return defragResult{}, err
	}
	if err := run.copy(); err != nil {
		return run.res, err
	}
	return run.res, run.catchUpAndSwap()
}

// defragRun is one copy in progress: started, copied, caught up and swapped in, in that order.
type defragRun struct {
	b       *Backend
	log     *defragLog
	src     *bolt.Tx // the state the copy reads; the log holds every write after it
	tmp     *bolt.DB
	tmpPath string
	res     defragResult
}

// startDefrag commits what is pending, then records every write after the state the copy
// reads, and creates the empty copy.
func (b *Backend) startDefrag() (*defragRun, error) {
	r := &defragRun{b: b, log: &defragLog{}, tmpPath: b.cfg.Path + defragSuffix}
	b.batchMu.Lock()
	if err := b.commitLocked(); err != nil {
		b.batchMu.Unlock()
		return nil, err
	}
	src, err := b.db.Load().Begin(false)
	if err != nil {
		b.batchMu.Unlock()
		return nil, fmt.Errorf("begin the copy's read transaction: %w", err)
	}
	r.src = src
	b.defrag = r.log
	b.batchMu.Unlock()
	if r.tmp, err = b.openDefragCopy(r.tmpPath); err != nil {
		src.Rollback()
		b.endDefrag(r.log)
		return nil, err
	}
	return r, nil
}

// giveUp discards the copy; the file in place goes on. The caller does not hold batchMu.
func (r *defragRun) giveUp(err error) error {
	if r.src != nil {
		r.src.Rollback()
	}
	r.tmp.Close()
	os.Remove(r.tmpPath)
	r.b.endDefrag(r.log)
	return err
}

// copy writes the state src sees into the copy, in synced commits; writes go on meanwhile.
func (r *defragRun) copy() error {
	failpoint.At(failpoint.DefragBeforeCopy)
	err := r.b.copyFile(r.tmp, r.src, r.log)
	r.src.Rollback() // the copy no longer pins the old file's pages
	r.src = nil
	if err != nil {
		return r.giveUp(err)
	}
	return nil
}

// catchUpAndSwap replays the recorded writes onto the copy in rounds while writes go on, until
// few are left, then replays those with writes held and swaps the copy in.
func (r *defragRun) catchUpAndSwap() error {
	b, d := r.b, r.log
	for {
		b.batchMu.Lock()
		if why := b.defragStoppedLocked(d); why != nil {
			b.batchMu.Unlock()
			return r.giveUp(why)
		}
		if len(d.writes) <= defragFinalWrites || r.res.rounds >= defragRounds {
			err := b.finishDefragLocked(r.tmp, r.tmpPath, d, &r.res)
			b.batchMu.Unlock()
			return err
		}
		writes := d.writes
		d.writes = nil
		b.batchMu.Unlock()
		r.res.rounds++
		r.res.replayed += len(writes)
		if err := replay(r.tmp, writes); err != nil {
			return r.giveUp(fmt.Errorf("replay writes onto the copy: %w", err))
		}
	}
}

// defragStoppedLocked says why the copy in hand cannot become the file, or nil.
func (b *Backend) defragStoppedLocked(d *defragLog) error {
	switch {
	case d.stopped != nil:
		return d.stopped
	case b.failed != nil:
		return b.failed
	case d.rawWrite:
		return errRawWrite
	}
	return nil
}

// endDefrag stops recording writes for d.
func (b *Backend) endDefrag(d *defragLog) {
	b.batchMu.Lock()
	if b.defrag == d {
		b.defrag = nil
	}
	b.batchMu.Unlock()
}

// openDefragCopy creates the empty copy. Its commits are synced as the file's are (see
// defragTxBytes); a crash before the rename leaves only a stale copy, removed at the next Open.
func (b *Backend) openDefragCopy(path string) (*bolt.DB, error) {
	_ = os.Remove(path)
	tmp, err := openDBAt(b.cfg, path)
	if msg, ok := failpoint.Value(failpoint.DefragOpenFileError); ok && err == nil {
		tmp.Close()
		os.Remove(path)
		err = errors.New(msg)
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return tmp, nil
}

// finishDefragLocked replays the last recorded writes onto the copy, syncs it and renames it
// over the file, then swaps it in; writes wait meanwhile (the caller holds batchMu). On an error
// before the rename the old file and the batch's pending writes go on untouched.
func (b *Backend) finishDefragLocked(tmp *bolt.DB, tmpPath string, d *defragLog, res *defragResult) error {
	held := time.Now()
	defer func() { res.held = time.Since(held) }()
	b.defrag = nil
	giveUp := func(err error) error {
		tmp.Close()
		os.Remove(tmpPath)
		return err
	}
	res.replayed += len(d.writes)
	if err := replay(tmp, d.writes); err != nil {
		return giveUp(fmt.Errorf("replay writes onto the copy: %w", err))
	}
	failpoint.At(failpoint.DefragBeforeRename)
	if err := os.Rename(tmpPath, b.cfg.Path); err != nil {
		return giveUp(fmt.Errorf("rename %s: %w", tmpPath, err))
	}
	dirErr := fileutil.SyncDir(filepath.Dir(b.cfg.Path))
	// The copy holds every write of the batch's transaction, which the old file never gets.
	b.retireShared()
	if err := b.tx.Rollback(); err != nil {
		b.log.Warn("discarding the old file's pending writes failed", "error", err)
	}
	b.pending = 0
	b.swapLocked(tmp)
	if err := b.begin(); err != nil {
		return err
	}
	for _, fn := range b.onCommit {
		fn()
	}
	if dirErr != nil {
		return fmt.Errorf("the copy is in place but its name may not survive a crash: %w", dirErr)
	}
	return nil
}

// copyFile copies every bucket src sees into dst, in write transactions of at most
// defragTxBytes, stopping early when d is stopped.
func (b *Backend) copyFile(dst *bolt.DB, src *bolt.Tx, d *defragLog) error {
	if msg, ok := failpoint.Value(failpoint.DefragdbFail); ok {
		return errors.New(msg)
	}
	c := &copier{dst: dst, stop: &d.stop}
	err := Guard(b.cfg.Path, func() error {
		return src.ForEach(func(name []byte, bk *bolt.Bucket) error { return c.bucket([][]byte{name}, bk) })
	})
	if err == nil {
		err = c.commit()
	}
	if c.tx != nil {
		c.tx.Rollback()
	}
	if errors.Is(err, errStopped) {
		return fmt.Errorf("copy stopped: %w", err)
	}
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	return nil
}

// copier writes a bucket tree into dst in bounded transactions.
type copier struct {
	dst  *bolt.DB
	stop *atomic.Bool
	tx   *bolt.Tx
	size int
	// last is the destination bucket of the latest write, at lastPath, in tx.
	last     *bolt.Bucket
	lastPath [][]byte
}

// bucket copies src, found at path, with its sequence and nested buckets.
func (c *copier) bucket(path [][]byte, src *bolt.Bucket) error {
	dst, err := c.target(path)
	if err != nil {
		return err
	}
	if err := dst.SetSequence(src.Sequence()); err != nil {
		return err
	}
	cur := src.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if c.stop.Load() {
			return errStopped
		}
		if v == nil {
			if sub := src.Bucket(k); sub != nil {
				if err := c.bucket(append(path[:len(path):len(path)], k), sub); err != nil {
					return err
				}
				continue
			}
		}
		if dst, err = c.target(path); err != nil {
			return err
		}
		if err := dst.Put(k, v); err != nil {
			return fmt.Errorf("put %x: %w", k, err)
		}
		c.size += len(k) + len(v)
		if c.size >= defragTxBytes {
			if err := c.commit(); err != nil {
				return err
			}
		}
	}
	return nil
}

// target is the destination bucket at path in the current transaction, begun and created as needed.
func (c *copier) target(path [][]byte) (*bolt.Bucket, error) {
	if c.tx == nil {
		tx, err := c.dst.Begin(true)
		if err != nil {
			return nil, err
		}
		c.tx, c.last = tx, nil
	}
	if c.last != nil && samePath(c.lastPath, path) {
		return c.last, nil
	}
	var bk *bolt.Bucket
	for i, name := range path {
		var err error
		if i == 0 {
			bk, err = c.tx.CreateBucketIfNotExists(name)
		} else {
			bk, err = bk.CreateBucketIfNotExists(name)
		}
		if err != nil {
			return nil, fmt.Errorf("create bucket %q: %w", name, err)
		}
		bk.FillPercent = defragFillPercent
	}
	c.last, c.lastPath = bk, append([][]byte(nil), path...)
	return bk, nil
}

func (c *copier) commit() error {
	if c.tx == nil {
		return nil
	}
	tx := c.tx
	c.tx, c.last, c.size = nil, nil, 0
	return tx.Commit()
}

func samePath(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// replay applies recorded writes to db in order, in transactions of at most defragTxBytes.
func replay(db *bolt.DB, writes []loggedWrite) error {
	for len(writes) > 0 {
		size, n := 0, 0
		for n < len(writes) && size < defragTxBytes {
			size += len(writes[n].key) + len(writes[n].value)
			n++
		}
		batch := writes[:n]
		writes = writes[n:]
		err := db.Update(func(tx *bolt.Tx) error {
			var bk *bolt.Bucket
			var name []byte
			for _, w := range batch {
				if bk == nil || !bytes.Equal(w.bucket, name) {
					var err error
					if bk, err = tx.CreateBucketIfNotExists(w.bucket); err != nil {
						return fmt.Errorf("bucket %q: %w", w.bucket, err)
					}
					bk.FillPercent = defragFillPercent
					name = w.bucket
				}
				var err error
				if w.del {
					err = bk.Delete(w.key)
				} else {
					err = bk.Put(w.key, w.value)
				}
				if err != nil {
					return fmt.Errorf("%s/%x: %w", w.bucket, w.key, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
