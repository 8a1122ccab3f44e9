// Package wal is the member's write-ahead log: raft entries, hard states and snapshot markers in
// checksummed records, spread over segment files that are fsynced before a write is acknowledged.
//
// Segment files are named %016x-%016x.wal (sequence, first raft index they may hold). Every
// segment starts with the metadata record and the latest hard state, so old segments can be
// deleted once a snapshot covers them. On open, an interrupted write at the very end of the last
// segment is cut off; damage anywhere else is reported as corruption and nothing is changed.
package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// SegmentSizeBytes is the size after which the log moves to a new segment file.
const SegmentSizeBytes = 64 << 20

var (
	ErrCorrupt          = errors.New("wal: corrupt")
	ErrSnapshotNotFound = errors.New("wal: snapshot marker not found")
	ErrLocked           = errors.New("wal: directory is in use by another process")
)

type segment struct {
	seq, index uint64
	name       string
}

// WAL appends to the last segment. It is safe for use by one writer goroutine plus ReleaseTo
// from another.
type WAL struct {
	dir      string
	metadata []byte

	mu       sync.Mutex
	f        *os.File
	size     int64
	segments []segment
	lastIdx  uint64
	state    raftpb.HardState
	buf      []byte
	lockFile *os.File
	segLimit int64
	// pendingSnap is the snapshot marker ReadAll must find.
	pendingSnap raftpb.SnapshotMetadata
	// maxFiles bounds the segment files kept once snapshots cover them (0: keep all; -1, the
	// default, keeps none that are covered).
	maxFiles int
	// noSync skips fsync (--unsafe-no-fsync).
	noSync bool
	obs    Observer
}

// Observer hears how long appends and fsyncs take (for metrics).
type Observer interface {
	Wrote(bytes int, took time.Duration)
	Synced(took time.Duration)
}

// SetObserver reports every write and fsync to o.
func (w *WAL) SetObserver(o Observer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs = o
}

// SetMaxFiles keeps up to n segment files even when snapshots cover them (--max-wals);
// 0 keeps every file.
func (w *WAL) SetMaxFiles(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.maxFiles = n
}

// SetUnsafeNoSync stops fsyncing appends: acknowledged writes can be lost in a crash.
func (w *WAL) SetUnsafeNoSync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noSync = true
}

func (w *WAL) sync() error {
	if w.noSync {
		return nil
	}
	start := time.Now()
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("wal: fsync: %w", err)
	}
	if w.obs != nil {
		w.obs.Synced(time.Since(start))
	}
	return nil
}

// Exist reports whether dir holds a WAL.
func Exist(dir string) bool {
	segs, err := listSegments(dir)
	return err == nil && len(segs) > 0
}

// Create makes a new WAL in dir (which must not hold one) with the given metadata. The directory
// is built under a temporary name and renamed so a crash never leaves a half-made WAL.
func Create(dir string, metadata []byte) (*WAL, error) {
	if Exist(dir) {
		return nil, fmt.Errorf("wal: %s already holds a log", dir)
	}
	tmp := filepath.Clean(dir) + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("wal: clean %s: %w", tmp, err)
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", tmp, err)
	}
	name := segmentName(0, 0)
	var b []byte
	b = encodeRecord(b, recMetadata, metadata)
	snap, _ := (&raftpb.SnapshotMetadata{}).Marshal()
	b = encodeRecord(b, recSnapshot, snap)
	if err := writeFileSync(filepath.Join(tmp, name), b); err != nil {
		return nil, err
	}
	if err := syncDir(tmp); err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("wal: rename %s: %w", tmp, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	w, err := Open(dir, raftpb.SnapshotMetadata{})
	if err != nil {
		return nil, err
	}
	if _, _, _, err := w.ReadAll(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Open prepares the WAL in dir for reading from the snapshot marker snap. Call ReadAll before Save.
func Open(dir string, snap raftpb.SnapshotMetadata) (*WAL, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("wal: no segment files in %s", dir)
	}
	lf, err := os.OpenFile(filepath.Join(dir, segs[len(segs)-1].name), os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", segs[len(segs)-1].name, err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lf.Close()
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	}
	w := &WAL{dir: dir, segments: segs, lockFile: lf, segLimit: SegmentSizeBytes, maxFiles: -1}
	w.lastIdx = snap.Index
	w.pendingSnap = snap
	return w, nil
}

// ReadAll returns the metadata, the latest hard state and the entries after the snapshot given to
// Open. It cuts off an interrupted write at the end of the last segment and leaves the WAL ready
// for appending.
func (w *WAL) ReadAll() (metadata []byte, state raftpb.HardState, ents []raftpb.Entry, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, err := scan(w.dir, w.segments, w.pendingSnap, false)
	if err != nil {
		return nil, state, nil, err
	}
	if r.lastIdx > 0 {
		w.lastIdx = r.lastIdx
	}
	if r.torn {
		if err := w.lockFile.Truncate(r.goodEnd); err != nil {
			return nil, state, nil, fmt.Errorf("wal: cut torn tail of %s: %w", w.segments[len(w.segments)-1].name, err)
		}
		if err := w.lockFile.Sync(); err != nil {
			return nil, state, nil, fmt.Errorf("wal: sync %s: %w", w.segments[len(w.segments)-1].name, err)
		}
	}
	if _, err := w.lockFile.Seek(r.goodEnd, 0); err != nil {
		return nil, state, nil, fmt.Errorf("wal: seek: %w", err)
	}
	w.f = w.lockFile
	w.size = r.goodEnd
	w.metadata = r.metadata
	w.state = r.state
	return r.metadata, r.state, r.ents, nil
}

// ReadEntries returns every entry the WAL in dir still holds, without locking or changing any file
// (a torn final write is ignored, not cut). For offline tools.
func ReadEntries(dir string) ([]raftpb.Entry, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("wal: no segment files in %s", dir)
	}
	r, err := scan(dir, segs, raftpb.SnapshotMetadata{}, true)
	if err != nil {
		return nil, err
	}
	return r.ents, nil
}

// scanResult is what reading the segments found.
type scanResult struct {
	metadata []byte
	state    raftpb.HardState
	ents     []raftpb.Entry
	lastIdx  uint64
	goodEnd  int64 // end of the last complete record in the last segment
	torn     bool  // the last segment ends in an interrupted write
}

// scan decodes the segments, keeping entries after snap. Offline readers pass partial: the
// entries then start wherever the oldest remaining segment starts.
func scan(dir string, segs []segment, snap raftpb.SnapshotMetadata, partial bool) (*scanResult, error) {
	r := &scanResult{}
	foundSnap := snap.Index == 0
	lastSeg := len(segs) - 1
	for i, s := range segs {
		path := filepath.Join(dir, s.name)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("wal: read %s: %w", s.name, err)
		}
		off := 0
		for off < len(data) {
			t, payload, n, rerr := decodeRecord(data[off:])
			if rerr != nil {
				if i == lastSeg && isTail(data[off:]) {
					break // interrupted final write
				}
				return nil, fmt.Errorf("%w: %s at offset %d: %v", ErrCorrupt, path, off, rerr)
			}
			off += n
			switch t {
			case recMetadata:
				if r.metadata != nil && string(r.metadata) != string(payload) {
					return nil, fmt.Errorf("%w: %s: metadata differs from earlier segments", ErrCorrupt, path)
				}
				r.metadata = append([]byte(nil), payload...)
			case recEntry:
				var e raftpb.Entry
				if err := e.Unmarshal(payload); err != nil {
					return nil, fmt.Errorf("%w: %s at offset %d: entry: %v", ErrCorrupt, path, off, err)
				}
				if e.Index > snap.Index {
					first := snap.Index + 1
					if len(r.ents) == 0 && partial {
						first = e.Index // offline read of a WAL whose older segments were released
					} else if len(r.ents) > 0 {
						first = r.ents[0].Index
					}
					// A later entry at the same index replaces the earlier one and everything after it.
					if e.Index < first || e.Index-first > uint64(len(r.ents)) {
						return nil, fmt.Errorf("%w: %s: missing entries before index %d", ErrCorrupt, path, e.Index)
					}
					r.ents = append(r.ents[:e.Index-first], e)
				}
				r.lastIdx = e.Index
			case recState:
				if err := r.state.Unmarshal(payload); err != nil {
					return nil, fmt.Errorf("%w: %s: hard state: %v", ErrCorrupt, path, err)
				}
			case recSnapshot:
				var m raftpb.SnapshotMetadata
				if err := m.Unmarshal(payload); err != nil {
					return nil, fmt.Errorf("%w: %s: snapshot marker: %v", ErrCorrupt, path, err)
				}
				if m.Index == snap.Index {
					if m.Term != snap.Term {
						return nil, fmt.Errorf("%w: snapshot marker at index %d has term %d, snapshot file says %d",
							ErrCorrupt, m.Index, m.Term, snap.Term)
					}
					foundSnap = true
				}
			default:
				return nil, fmt.Errorf("%w: %s at offset %d: unknown record type %d", ErrCorrupt, path, off, t)
			}
		}
		if i == lastSeg {
			r.goodEnd = int64(off)
			r.torn = int64(len(data)) > r.goodEnd
		}
	}
	if !foundSnap {
		return nil, fmt.Errorf("%w: index %d term %d", ErrSnapshotNotFound, snap.Index, snap.Term)
	}
	if len(r.ents) > 0 {
		r.lastIdx = r.ents[len(r.ents)-1].Index
	}
	return r, nil
}

// Save appends the hard state and entries, fsyncing when raft requires durability: new entries or
// a changed term or vote.
func (w *WAL) Save(st raftpb.HardState, ents []raftpb.Entry) error {
	if raft.IsEmptyHardState(st) && len(ents) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	mustSync := len(ents) > 0 || st.Term != w.state.Term || st.Vote != w.state.Vote
	w.buf = w.buf[:0]
	for i := range ents {
		b, err := ents[i].Marshal()
		if err != nil {
			return fmt.Errorf("wal: marshal entry: %w", err)
		}
		w.buf = encodeRecord(w.buf, recEntry, b)
	}
	if !raft.IsEmptyHardState(st) {
		b, err := st.Marshal()
		if err != nil {
			return fmt.Errorf("wal: marshal hard state: %w", err)
		}
		w.buf = encodeRecord(w.buf, recState, b)
		w.state = st
	}
	if err := w.write(w.buf); err != nil {
		return err
	}
	if len(ents) > 0 {
		w.lastIdx = ents[len(ents)-1].Index
	}
	if mustSync {
		if err := w.sync(); err != nil {
			return err
		}
	}
	if w.size >= w.segLimit {
		return w.cut()
	}
	return nil
}

// SaveSnapshot records that a snapshot at meta exists, durably, before the snapshot is used.
func (w *WAL) SaveSnapshot(meta raftpb.SnapshotMetadata) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := meta.Marshal()
	if err != nil {
		return fmt.Errorf("wal: marshal snapshot marker: %w", err)
	}
	if err := w.write(encodeRecord(nil, recSnapshot, b)); err != nil {
		return err
	}
	if meta.Index > w.lastIdx {
		w.lastIdx = meta.Index
	}
	return w.sync()
}

func (w *WAL) write(b []byte) error {
	start := time.Now()
	n, err := w.f.Write(b)
	w.size += int64(n)
	if w.obs != nil {
		w.obs.Wrote(n, time.Since(start))
	}
	if err != nil {
		return fmt.Errorf("wal: write %s: %w", w.segments[len(w.segments)-1].name, err)
	}
	return nil
}

// cut starts a new segment whose first possible index is lastIdx+1.
func (w *WAL) cut() error {
	last := w.segments[len(w.segments)-1]
	s := segment{seq: last.seq + 1, index: w.lastIdx + 1}
	s.name = segmentName(s.seq, s.index)
	var b []byte
	b = encodeRecord(b, recMetadata, w.metadata)
	st, err := w.state.Marshal()
	if err != nil {
		return fmt.Errorf("wal: marshal hard state: %w", err)
	}
	b = encodeRecord(b, recState, st)
	tmp := filepath.Join(w.dir, s.name+".tmp")
	if err := writeFileSync(tmp, b); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, s.name)); err != nil {
		return fmt.Errorf("wal: rename new segment: %w", err)
	}
	if err := syncDir(w.dir); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(w.dir, s.name), os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("wal: open new segment: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("%w: %s", ErrLocked, w.dir)
	}
	w.f.Close()
	w.f, w.lockFile = f, f
	w.size = int64(len(b))
	w.segments = append(w.segments, s)
	return nil
}

// ReleaseTo deletes segments whose entries are all at or below index (covered by a snapshot).
func (w *WAL) ReleaseTo(index uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	keepFrom := 0
	for i := 0; i+1 < len(w.segments); i++ {
		if w.segments[i+1].index <= index+1 {
			keepFrom = i + 1
		}
	}
	switch {
	case w.maxFiles == 0:
		keepFrom = 0
	case w.maxFiles > 0:
		// Only the oldest files beyond the limit go, and only those the snapshot covers.
		keepFrom = min(keepFrom, max(0, len(w.segments)-w.maxFiles))
	}
	for _, s := range w.segments[:keepFrom] {
		if err := os.Remove(filepath.Join(w.dir, s.name)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("wal: remove %s: %w", s.name, err)
		}
	}
	w.segments = append([]segment(nil), w.segments[keepFrom:]...)
	if keepFrom > 0 {
		return syncDir(w.dir)
	}
	return nil
}

// SegmentCount is the number of segment files on disk.
func (w *WAL) SegmentCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.segments)
}

// Close releases the lock; it does not sync (every acknowledged write was already synced).
func (w *WAL) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lockFile != nil {
		err := w.lockFile.Close()
		w.lockFile, w.f = nil, nil
		return err
	}
	return nil
}

func segmentName(seq, index uint64) string { return fmt.Sprintf("%016x-%016x.wal", seq, index) }

func listSegments(dir string) ([]segment, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: read dir: %w", err)
	}
	var segs []segment
	for _, de := range des {
		name := de.Name()
		if !strings.HasSuffix(name, ".wal") {
			continue
		}
		var s segment
		if _, err := fmt.Sscanf(name, "%016x-%016x.wal", &s.seq, &s.index); err != nil {
			continue
		}
		s.name = name
		segs = append(segs, s)
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].seq < segs[j].seq })
	for i := 1; i < len(segs); i++ {
		if segs[i].seq != segs[i-1].seq+1 {
			return nil, fmt.Errorf("%w: segment sequence gap between %s and %s", ErrCorrupt, segs[i-1].name, segs[i].name)
		}
	}
	return segs, nil
}

func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("wal: create %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("wal: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("wal: fsync %s: %w", path, err)
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("wal: open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("wal: fsync dir %s: %w", dir, err)
	}
	return nil
}
