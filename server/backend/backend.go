package backend

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"etcdx/server/failpoint"
)

// Batching defaults, as upstream.
var (
	defaultBatchInterval   = 100 * time.Millisecond
	defaultBatchLimit      = 10000
	defaultInitialMmapSize = int64(10 << 30)
)

// ErrLocked means another process holds the file.
var ErrLocked = errors.New("backend: database file is locked by another process")

// Config says where the file is, which buckets it must have and how writes are batched.
type Config struct {
	Path string
	// Buckets are created when the file is opened or replaced (schema.Buckets for a member).
	Buckets [][]byte
	// BatchInterval is how often the batch is committed (zero: 100 ms); negative: never on
	// its own, the owner calls Commit (the stepped simulation commits on its own clock).
	BatchInterval time.Duration
	BatchLimit    int
	Logger        *slog.Logger
	// OpenTimeout bounds the wait for the file lock; zero means one second.
	OpenTimeout time.Duration
	// FreelistType is bbolt's freelist: "map" (default) or "array".
	FreelistType string
	// UnsafeNoSync skips fsync on commit (--unsafe-no-fsync).
	UnsafeNoSync bool
	// InitialMmapSize is bbolt's first memory map in bytes; zero means 10 GiB. A map that large
	// from the start spares remapping (which blocks every reader) while the file grows.
	InitialMmapSize int64

	// openFile replaces os.OpenFile for the database file (tests make its writes fail).
	openFile func(string, int, os.FileMode) (*os.File, error)
}

// sharedRead is a read transaction many readers use at once (bbolt's read-only transactions
// allow that). Opening one per read cost a 1-key get a tenth of its time in bbolt's locks.
type sharedRead struct {
	tx      *bolt.Tx
	readers sync.WaitGroup
}

// Backend is safe for concurrent use.
type Backend struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	// db is the open file. Defrag and ReplaceWith swap it while readers run: a reader that
	// finds the file it loaded closed under it loads again (see view), and a swapped-out file is
	// closed once its last read transaction ends (retiring counts those closes).
	db       atomic.Pointer[bolt.DB]
	retiring sync.WaitGroup

	// shared is the read transaction Read hands out, begun after the latest commit; nil while a
	// commit runs (readers then open their own). Guarded by sharedMu.
	sharedMu sync.RWMutex
	shared   *sharedRead

	// size is the committed file's size, recorded as each write transaction begins: the quota
	// check reads it for every write, and a read transaction per write cost more than the check.
	size atomic.Int64

	batchMu  sync.Mutex
	tx       *bolt.Tx
	pending  int
	onCommit []func()
	// defrag follows the writes made while Defrag copies the file (nil when none runs).
	defrag *defragLog
	// defragMu lets one Defrag run at a time; closing stops a running one.
	defragMu sync.Mutex
	closing  atomic.Bool

	// failed is the first commit or begin error. After it the batch is a read-only view of the
	// last committed state and nothing is ever committed again: a later commit would record a
	// consistent index past writes that were lost with the failed transaction.
	failed  error
	failedC chan struct{}

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open opens or creates the file, creates the buckets and starts the batch committer.
func Open(cfg Config) (*Backend, error) {
	if cfg.BatchInterval == 0 {
		cfg.BatchInterval = defaultBatchInterval
	}
	if cfg.BatchLimit == 0 {
		cfg.BatchLimit = defaultBatchLimit
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if cfg.OpenTimeout == 0 {
		cfg.OpenTimeout = time.Second
	}
	db, err := openDB(cfg)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, log: cfg.Logger, stop: make(chan struct{}), done: make(chan struct{}), failedC: make(chan struct{}), m: newMetrics()}
	b.db.Store(db)
	b.removeStaleDefragCopy()
	if err := ensureBuckets(db, cfg.Buckets); err != nil {
		db.Close()
		return nil, fmt.Errorf("backend: %s: %w", cfg.Path, err)
	}
	if err := b.begin(); err != nil {
		db.Close()
		return nil, err
	}
	if cfg.BatchInterval > 0 {
		go b.run()
	} else {
		close(b.done)
	}
	return b, nil
}

// ensureBuckets creates the missing buckets. A file that has them all is not written to, so
// a member that refuses to start leaves its database as it found it.
func ensureBuckets(db *bolt.DB, names [][]byte) error {
	missing := false
	err := SafeView(db, func(tx *bolt.Tx) error {
		for _, name := range names {
			missing = missing || tx.Bucket(name) == nil
		}
		return nil
	})
	if err != nil || !missing {
		return err
	}
	return SafeUpdate(db, func(tx *bolt.Tx) error { return createBuckets(tx, names) })
}

func createBuckets(tx *bolt.Tx, names [][]byte) error {
	for _, name := range names {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

func openDB(cfg Config) (*bolt.DB, error) { return openDBAt(cfg, cfg.Path) }

// openDBAt opens the file at path (cfg.Path, or the copy Defrag writes) with cfg's options.
func openDBAt(cfg Config, path string) (*bolt.DB, error) {
	fl := bolt.FreelistMapType
	if cfg.FreelistType == string(bolt.FreelistArrayType) {
		fl = bolt.FreelistArrayType
	}
	// The free list is not written at commits, as upstream's: it is rebuilt when the file is
	// opened. Writing it made every commit after a large compaction write and sync megabytes
	// (a 46 ms commit, stalling the apply loop, with a million deleted revisions).
	mmapSize := cfg.InitialMmapSize
	if mmapSize <= 0 {
		mmapSize = defaultInitialMmapSize
	}
	db, err := OpenFile(path, &bolt.Options{Timeout: cfg.OpenTimeout, InitialMmapSize: int(mmapSize), FreelistType: fl,
		NoSync: cfg.UnsafeNoSync, NoFreelistSync: true, MmapFlags: mmapFlags, OpenFile: cfg.openFile})
	if err == nil && cfg.UnsafeNoSync {
		db.NoSync = true
	}
	return db, err
}

// OpenFile opens a bbolt file safely, for the server and for offline tools alike: a damaged file
// (on which bbolt may panic) is an error naming the file, and a file another process holds
// (opts.Timeout passed waiting for its lock) is ErrLocked.
func OpenFile(path string, opts *bolt.Options) (db *bolt.DB, err error) {
	mode := os.FileMode(0o600)
	if opts != nil && opts.ReadOnly {
		mode = 0o400
	}
	if gerr := Guard(path, func() error { db, err = bolt.Open(path, mode, opts); return nil }); gerr != nil {
		return nil, fmt.Errorf("%s is not a valid database file: %w", path, gerr)
	}
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// OnCommit registers fn to run, with the batch lock held, after every commit.
func (b *Backend) OnCommit(fn func()) {
	b.batchMu.Lock()
	b.onCommit = append(b.onCommit, fn)
	b.batchMu.Unlock()
}

// begin starts the batch's write transaction and the shared read transaction on the open file.
// The caller holds batchMu (or is Open).
func (b *Backend) begin() error {
	failpoint.At(failpoint.BeforeStartDBTxn)
	tx, err := b.db.Load().Begin(true)
	failpoint.At(failpoint.AfterStartDBTxn)
	if err != nil {
		return b.failLocked(fmt.Errorf("backend: begin write transaction: %w", err))
	}
	b.tx = tx
	b.size.Store(tx.Size())
	b.beginShared()
	return nil
}

// beginShared starts the shared read transaction on what is committed now. The caller holds
// batchMu. If bbolt refuses, readers keep opening their own.
func (b *Backend) beginShared() {
	tx, err := b.db.Load().Begin(false)
	if err != nil {
		b.log.Warn("cannot begin the shared read transaction; reads open their own", "error", err)
		return
	}
	b.sharedMu.Lock()
	b.shared = &sharedRead{tx: tx}
	b.sharedMu.Unlock()
}

// retireShared stops handing out the shared read transaction and rolls it back once its last
// reader is done. It must go before a commit: bbolt's commit may grow the memory map, which
// waits for every open read transaction.
func (b *Backend) retireShared() {
	b.sharedMu.Lock()
	old := b.shared
	b.shared = nil
	b.sharedMu.Unlock()
	if old != nil {
		go func() {
			old.readers.Wait()
			_ = old.tx.Rollback()
		}()
	}
}

// failLocked records the first failure, swaps the dead write transaction for a read-only one
// (so code reading through the batch keeps working and bbolt itself refuses writes), and
// returns err. The caller holds batchMu.
func (b *Backend) failLocked(err error) error {
	if b.failed != nil {
		return err
	}
	b.failed = err
	b.pending = 0
	if b.tx != nil && b.tx.Writable() {
		// Release bbolt's writer lock if the transaction still holds it (a panic inside a put);
		// a transaction that failed to commit is already closed and this is a no-op.
		_ = Guard(b.cfg.Path, b.tx.Rollback)
	}
	b.tx = nil
	if tx, rerr := b.db.Load().Begin(false); rerr == nil {
		b.tx = tx
	}
	close(b.failedC)
	return err
}

// Failed is closed when a commit fails; Err then says why. The backend takes no more writes.
func (b *Backend) Failed() <-chan struct{} { return b.failedC }

// Err is the failure that closed Failed, or nil.
func (b *Backend) Err() error {
	b.batchMu.Lock()
	defer b.batchMu.Unlock()
	return b.failed
}

func (b *Backend) run() {
	defer close(b.done)
	t := time.NewTicker(b.cfg.BatchInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := b.Commit(); err != nil {
				b.log.Error("periodic backend commit failed", "error", err)
				if b.Err() != nil {
					return // the owner stops on Failed; retrying every tick would only repeat this
				}
			}
		case <-b.stop:
			return
		}
	}
}

// BatchTx is the write transaction, held exclusively between Lock and Unlock.
type BatchTx struct{ b *Backend }

// Batch locks the write transaction for the caller.
func (b *Backend) Batch() *BatchTx {
	b.batchMu.Lock()
	return &BatchTx{b: b}
}

// Put writes key=value into bucket.
func (t *BatchTx) Put(bucket, key, value []byte) error { return t.put(bucket, key, value, false) }

// SeqPut writes key=value into a bucket whose keys are written in ascending order (the MVCC
// revisions): a page that fills is split with 90% of it kept full, as upstream does, instead of
// bbolt's half, since no key will land in it again. The file holds about half the pages it
// would otherwise, for the same records.
func (t *BatchTx) SeqPut(bucket, key, value []byte) error { return t.put(bucket, key, value, true) }

func (t *BatchTx) put(bucket, key, value []byte, seq bool) error {
	if t.b.failed != nil {
		return fmt.Errorf("backend: put %s/%x refused after a failed write: %w", bucket, key, t.b.failed)
	}
	t.b.pending++
	if err := Guard(t.b.cfg.Path, func() error {
		bk := t.b.tx.Bucket(bucket)
		if seq {
			bk.FillPercent = seqFillPercent
		}
		return bk.Put(key, value)
	}); err != nil {
		if errors.Is(err, ErrCorrupt) {
			t.b.failLocked(err) // the transaction is in an unknown state: never commit it
		}
		return fmt.Errorf("backend: put %s/%x: %w", bucket, key, err)
	}
	if d := t.b.defrag; d != nil {
		d.record(bucket, key, value, false)
	}
	return nil
}

// Delete removes key from bucket.
func (t *BatchTx) Delete(bucket, key []byte) error {
	if t.b.failed != nil {
		return fmt.Errorf("backend: delete %s/%x refused after a failed write: %w", bucket, key, t.b.failed)
	}
	t.b.pending++
	if err := Guard(t.b.cfg.Path, func() error { return t.b.tx.Bucket(bucket).Delete(key) }); err != nil {
		if errors.Is(err, ErrCorrupt) {
			t.b.failLocked(err) // the transaction is in an unknown state: never commit it
		}
		return fmt.Errorf("backend: delete %s/%x: %w", bucket, key, err)
	}
	if d := t.b.defrag; d != nil {
		d.record(bucket, key, nil, true)
	}
	return nil
}

// Tx exposes the write transaction for range scans inside the batch. After a failed commit it
// is a read-only view of the last committed state, or an error when even that is gone.
func (t *BatchTx) Tx() (*bolt.Tx, error) {
	if t.b.tx == nil || t.b.tx.DB() == nil {
		return nil, fmt.Errorf("backend: no transaction: %w", t.b.failed)
	}
	return t.b.tx, nil
}

// WritableTx is Tx for callers that write through bbolt directly (schema migrations, membership
// rewrites): it counts as a pending write, so the next commit (or Close) makes it durable.
func (t *BatchTx) WritableTx() (*bolt.Tx, error) {
	if t.b.failed != nil {
		return nil, fmt.Errorf("backend: write refused after a failed write: %w", t.b.failed)
	}
	tx, err := t.Tx()
	if err == nil {
		t.b.pending++
		if d := t.b.defrag; d != nil {
			d.rawWrite = true // a running Defrag cannot follow these writes: it starts its copy again
		}
	}
	return tx, err
}

// Fail throws away every write since the last commit and refuses all later ones, as a failed
// commit does: for a caller that finds it wrote something that must never become durable.
func (t *BatchTx) Fail(cause error) {
	_ = t.b.failLocked(fmt.Errorf("backend: uncommitted writes discarded: %w", cause))
}

// Unlock releases the batch, committing first if enough writes are pending.
func (t *BatchTx) Unlock() error {
	var err error
	if t.b.pending >= t.b.cfg.BatchLimit {
		err = t.b.commitLocked()
	}
	t.b.batchMu.Unlock()
	return err
}

// Crash closes the file as a power cut leaves it: what the batch holds since its last commit is
// lost. The simulation's members crash this way.
func (b *Backend) Crash() error {
	b.batchMu.Lock()
	if b.failed == nil && b.pending > 0 {
		// Close rolls back a batch with nothing pending, committing nothing.
		b.pending = 0
	}
	b.batchMu.Unlock()
	return b.Close()
}

// Commit makes every write so far durable.
func (b *Backend) Commit() error {
	b.batchMu.Lock()
	defer b.batchMu.Unlock()
	return b.commitLocked()
}

func (b *Backend) commitLocked() error {
	if b.failed != nil {
		return b.failed
	}
	if b.pending == 0 {
		return nil
	}
	start := time.Now()
	tx := b.tx
	failpoint.At(failpoint.CommitBeforePreCommitHook)
	b.retireShared()
	failpoint.At(failpoint.CommitAfterPreCommitHook)
	failpoint.At(failpoint.BeforeCommit)
	if err := Guard(b.cfg.Path, tx.Commit); err != nil {
		return b.failLocked(fmt.Errorf("backend: commit: %w", err))
	}
	failpoint.At(failpoint.AfterCommit)
	b.m.committed(time.Since(start), tx.Stats())
	b.pending = 0
	for _, fn := range b.onCommit {
		fn()
	}
	return b.begin()
}

// View runs fn in a read transaction of its own over committed data.
func (b *Backend) View(fn func(tx *bolt.Tx) error) error {
	for {
		db := b.db.Load()
		err := Guard(b.cfg.Path, func() error { return db.View(fn) })
		if errors.Is(err, bolterrors.ErrDatabaseNotOpen) && db != b.db.Load() {
			continue // swapped and closed between the load and the begin: read the new file
		}
		return err
	}
}

// beginRead opens a read transaction on the open file, following a swap as View does.
func (b *Backend) beginRead() (*bolt.Tx, error) {
	for {
		db := b.db.Load()
		tx, err := db.Begin(false)
		if errors.Is(err, bolterrors.ErrDatabaseNotOpen) && db != b.db.Load() {
			continue
		}
		return tx, err
	}
}

// Read is View for the request path: fn runs in the read transaction begun after the latest
// commit, shared with other readers, and must not keep anything it reads past its return.
// While a commit runs, fn gets a transaction of its own, which sees the same or newer data.
func (b *Backend) Read(fn func(tx *bolt.Tx) error) error {
	p, err := b.Pin()
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Do(fn)
}

// PinnedRead is a read transaction taken at one moment and read later: a reader takes it
// under its own lock, together with what that lock guards (the store's index and unwritten
// values), and reads the file after letting the lock go, so writers do not wait for the read.
type PinnedRead struct {
	tx      *bolt.Tx
	path    string
	release func()
}

// Pin takes the shared read transaction (or, while a commit runs, one of its own), as Read
// would. Release must be called.
func (b *Backend) Pin() (PinnedRead, error) {
	b.sharedMu.RLock()
	sr := b.shared
	if sr != nil {
		sr.readers.Add(1)
	}
	b.sharedMu.RUnlock()
	if sr != nil {
		return PinnedRead{tx: sr.tx, path: b.cfg.Path, release: sr.readers.Done}, nil
	}
	tx, err := b.beginRead()
	if err != nil {
		return PinnedRead{}, fmt.Errorf("backend: begin read transaction: %w", err)
	}
	return PinnedRead{tx: tx, path: b.cfg.Path, release: func() { _ = tx.Rollback() }}, nil
}

// Do runs fn in the pinned transaction; a damaged file is an error, as in Read.
func (p PinnedRead) Do(fn func(tx *bolt.Tx) error) error {
	return Guard(p.path, func() error { return fn(p.tx) })
}

// Release lets the transaction go: a commit that must grow the memory map waits for it.
func (p PinnedRead) Release() { p.release() }

// Size is the file's size in bytes; SizeInUse excludes free pages.
func (b *Backend) Size() int64 { return b.size.Load() }

// SizeInUse is the size minus the pages bbolt holds free.
func (b *Backend) SizeInUse() int64 {
	var size int64
	_ = b.View(func(tx *bolt.Tx) error {
		db := tx.DB()
		free := int64(db.Stats().FreePageN+db.Stats().PendingPageN) * int64(db.Info().PageSize)
		size = tx.Size() - free
		return nil
	})
	return size
}

// Hash is CRC-32C over every bucket's name, keys and values, in order.
func (b *Backend) Hash() (uint32, error) {
	start := time.Now()
	defer func() { b.m.hash.Observe(time.Since(start).Seconds()) }()
	if err := b.Commit(); err != nil {
		return 0, err
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	err := b.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			h.Write(name)
			return bk.ForEach(func(k, v []byte) error {
				h.Write(k)
				h.Write(v)
				return nil
			})
		})
	})
	return h.Sum32(), err
}

// Close commits pending writes and closes the file. Later calls return the first result.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		// A running Defrag gives up its copy; Close waits for it to have cleaned up.
		b.closing.Store(true)
		b.batchMu.Lock()
		b.stopDefragLocked(errClosing)
		b.batchMu.Unlock()
		b.defragMu.Lock()
		defer b.defragMu.Unlock()
		close(b.stop)
		<-b.done
		b.batchMu.Lock()
		defer b.batchMu.Unlock()
		b.retireShared()
		var err error
		if b.failed != nil {
			if b.tx != nil {
				b.tx.Rollback() // the read-only view; what failed stays uncommitted
			}
			err = b.failed
		} else if b.pending == 0 {
			err = b.tx.Rollback() // nothing to write: the file stays byte for byte as it was
		} else if err = b.tx.Commit(); err == nil {
			for _, fn := range b.onCommit {
				fn()
			}
		}
		b.closeErr = errors.Join(err, b.db.Load().Close())
		b.retiring.Wait()
	})
	return b.closeErr
}

// ReadSnapshot opens a read transaction on the committed state now and returns a reader that
// streams a consistent copy of the whole file, with its size (a member's snapshot for a client or
// a peer). The caller must Close the reader. Starting the transaction here,
// not in the reader, pins exactly the state at the call.
func (b *Backend) ReadSnapshot() (io.ReadCloser, int64, error) {
	if err := b.Commit(); err != nil {
		return nil, 0, err
	}
	// The transaction keeps its file open even if a defrag or a replacement swaps it out.
	tx, err := b.beginRead()
	if err != nil {
		return nil, 0, fmt.Errorf("backend: begin snapshot transaction: %w", err)
	}
	size := tx.Size()
	pr, pw := io.Pipe()
	start := time.Now()
	go func() {
		// Observed when the reader has taken the whole file, as upstream times a snapshot.
		defer func() { b.m.snapshot.Observe(time.Since(start).Seconds()) }()
		_, err := tx.WriteTo(pw)
		tx.Rollback()
		pw.CloseWithError(err)
	}()
	return pr, size, nil
}

// ReplaceWith swaps the database for the file at path (a snapshot received from the leader).
// Pending writes are discarded: the new file supersedes them, and so does it a running Defrag's
// copy. Readers on the old file finish on it.
func (b *Backend) ReplaceWith(path string) error {
	b.batchMu.Lock()
	defer b.batchMu.Unlock()
	if b.failed != nil {
		return b.failed
	}
	b.stopDefragLocked(errReplaced)
	b.retireShared()
	if err := b.tx.Rollback(); err != nil {
		return fmt.Errorf("backend: discard pending writes: %w", err)
	}
	b.pending = 0
	for _, fn := range b.onCommit {
		fn()
	}
	if err := os.Rename(path, b.cfg.Path); err != nil {
		// Nothing moved: the old file, still open, goes on.
		return errors.Join(fmt.Errorf("backend: move %s into place: %w", path, err), b.begin())
	}
	db, err := openDB(b.cfg)
	if err != nil {
		return b.failLocked(fmt.Errorf("backend: open after replace: %w", err))
	}
	b.swapLocked(db)
	prepErr := ensureBuckets(db, b.cfg.Buckets)
	if err := b.begin(); err != nil {
		return err
	}
	if prepErr != nil {
		return fmt.Errorf("backend: prepare replaced file: %w", prepErr)
	}
	return nil
}

// swapLocked makes db the open file and closes the one it replaces once that file's last read
// transaction has ended (bbolt's Close waits for them). The caller holds batchMu and has ended
// the batch's write transaction and retired the shared read.
func (b *Backend) swapLocked(db *bolt.DB) {
	old := b.db.Swap(db)
	b.retiring.Add(1)
	go func() {
		defer b.retiring.Done()
		if err := old.Close(); err != nil {
			b.log.Warn("closing the replaced database file failed", "error", err)
		}
	}()
}
