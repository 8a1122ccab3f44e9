package sim

import (
	"errors"
	"math/rand"
	"os"
	"sort"
	"sync"
)

// errPowerOff is what a powered-off disk answers.
var errPowerOff = errors.New("sim: the disk lost power")

// Disk is a member's WAL disk (wal.Disk) with power: appends stay in memory until Sync writes
// them to the segment file, so a power cut (PowerOff) loses exactly what was not synced, and
// nothing reaches the disk until PowerOn. The appends of a segment closed before they were synced
// (a member stopped gracefully) are lost too, which is harsher than a real disk: the checks may
// only rely on what was synced. With DropSyncs it is a lying disk: Sync acknowledges
// and throws the appends away (a planted bug the checks must catch).
type Disk struct {
	mu        sync.Mutex
	resumed   *sync.Cond // on mu: a stalled Sync waits for Resume
	pending   map[*os.File][]write
	seq       int // numbers the appends, so a torn power cut keeps them in the order they came
	off       bool
	dropSyncs bool
	stalled   bool
}

type write struct {
	b   []byte
	off int64
	seq int
}

// sectorSize is the unit a disk writes atomically: a torn write keeps whole sectors.
const sectorSize = 512

// NewDisk is a powered disk.
func NewDisk() *Disk {
	d := &Disk{pending: map[*os.File][]write{}}
	d.resumed = sync.NewCond(&d.mu)
	return d
}

// WriteAt keeps an append until the next Sync.
func (d *Disk) WriteAt(f *os.File, b []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return 0, errPowerOff
	}
	d.seq++
	d.pending[f] = append(d.pending[f], write{b: append([]byte(nil), b...), off: off, seq: d.seq})
	return len(b), nil
}

// Sync writes f's appends to the file. The file stands for the disk's stable contents, so no
// fsync is needed: only a simulated power cut loses anything.
func (d *Disk) Sync(f *os.File) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.stalled && !d.off {
		d.resumed.Wait()
	}
	if d.off {
		return errPowerOff
	}
	ws := d.pending[f]
	delete(d.pending, f)
	if d.dropSyncs {
		return nil
	}
	for _, w := range ws {
		if _, err := f.WriteAt(w.b, w.off); err != nil {
			return err
		}
	}
	return nil
}

// PowerOff cuts the power: what was not synced is gone, and every write fails until PowerOn.
func (d *Disk) PowerOff() {
	d.mu.Lock()
	d.off = true
	d.pending = map[*os.File][]write{}
	d.resumed.Broadcast()
	d.mu.Unlock()
}

// Stall makes every Sync wait until Resume (or a power cut): a disk that stops answering, which
// holds the member's raft loop in its WAL write as upstream's raftBeforeSave sleeping does.
func (d *Disk) Stall() {
	d.mu.Lock()
	d.stalled = true
	d.mu.Unlock()
}

// Resume lets the stalled syncs go on.
func (d *Disk) Resume() {
	d.mu.Lock()
	d.stalled = false
	d.resumed.Broadcast()
	d.mu.Unlock()
}

// PowerOffTorn cuts the power in the middle of writing back what was not synced: the disk kept
// the first of those appends, in order, and of the next one only its first whole sectors (the
// unit a disk writes atomically); the rest is gone. How far it got is drawn from rng. This is the
// torn last write a WAL must recognise and cut off at its next start.
func (d *Disk) PowerOffTorn(rng *rand.Rand) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	type filed struct {
		f *os.File
		w write
	}
	var all []filed
	for f, ws := range d.pending {
		for _, w := range ws {
			all = append(all, filed{f, w})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].w.seq < all[j].w.seq })
	d.off = true
	d.resumed.Broadcast()
	d.pending = map[*os.File][]write{}
	if len(all) == 0 {
		return nil
	}
	kept := rng.Intn(len(all)) // appends written whole; the next one is torn
	for _, a := range all[:kept] {
		if _, err := a.f.WriteAt(a.w.b, a.w.off); err != nil && !errors.Is(err, os.ErrClosed) {
			return err
		}
	}
	torn := all[kept]
	// The sector boundaries inside the torn append; it keeps the bytes up to one of them.
	first := (torn.w.off/sectorSize + 1) * sectorSize
	end := torn.w.off + int64(len(torn.w.b))
	if first >= end {
		return nil // it fits in one sector: written whole or not at all, here not at all
	}
	cut := first + rng.Int63n((end-first+sectorSize-1)/sectorSize)*sectorSize
	if _, err := torn.f.WriteAt(torn.w.b[:cut-torn.w.off], torn.w.off); !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// PowerOn restores the power.
func (d *Disk) PowerOn() {
	d.mu.Lock()
	d.off = false
	d.mu.Unlock()
}

// DropSyncs makes the disk lie: syncs succeed and lose the appends.
func (d *Disk) DropSyncs() {
	d.mu.Lock()
	d.dropSyncs = true
	d.mu.Unlock()
}
