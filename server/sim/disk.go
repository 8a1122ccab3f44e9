package sim

import (
	"errors"
	"os"
	"sync"
)

// errPowerOff is what a powered-off disk answers.
var errPowerOff = errors.New("sim: the disk lost power")

// Disk is a member's WAL disk (wal.Disk) with power: appends stay in memory until Sync writes
// them to the segment file, so a power cut (PowerOff) loses exactly what was not synced, and
// nothing reaches the disk until PowerOn. With DropSyncs it is a lying disk: Sync acknowledges
// and throws the appends away (a planted bug the checks must catch).
type Disk struct {
	mu        sync.Mutex
	pending   map[*os.File][]write
	off       bool
	dropSyncs bool
}

type write struct {
	b   []byte
	off int64
}

// NewDisk is a powered disk.
func NewDisk() *Disk { return &Disk{pending: map[*os.File][]write{}} }

// WriteAt keeps an append until the next Sync.
func (d *Disk) WriteAt(f *os.File, b []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return 0, errPowerOff
	}
	d.pending[f] = append(d.pending[f], write{b: append([]byte(nil), b...), off: off})
	return len(b), nil
}

// Sync writes f's appends to the file. The file stands for the disk's stable contents, so no
// fsync is needed: only a simulated power cut loses anything.
func (d *Disk) Sync(f *os.File) error {
	d.mu.Lock()
	defer d.mu.Unlock()
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
	d.mu.Unlock()
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
