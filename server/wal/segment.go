package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"etcdx/server/fileutil"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

type segment struct {
	seq, index uint64
	name       string
}

func segmentName(seq, index uint64) string { return fmt.Sprintf("%016x-%016x.wal", seq, index) }

// listSegments returns the segment files in dir by sequence. Other files (upstream's preallocated
// *.tmp files, *.broken copies) are ignored, as upstream does.
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
	return segs, nil
}

// checkSequence refuses a gap in the sequence numbers of the segments a read needs.
func checkSequence(segs []segment) error {
	for i := 1; i < len(segs); i++ {
		if segs[i].seq != segs[i-1].seq+1 {
			return fmt.Errorf("%w: segment sequence gap between %s and %s", ErrCorrupt, segs[i-1].name, segs[i].name)
		}
	}
	return nil
}

// segmentReader decodes the records of one segment, checking each against the crc chain.
type segmentReader struct {
	path string
	size int64
	r    *bufio.Reader
	off  int64 // end of the last good record
	// last says the segment is the newest one: only there can a bad record be a torn write.
	last bool
}

// next returns the next record, io.EOF at the end of the segment's records, an error wrapping
// errTorn for an interrupted write in the last segment, or ErrCorrupt.
func (sr *segmentReader) next(crc *uint32) (record, error) {
	var hdr [frameSize]byte
	n, err := io.ReadFull(sr.r, hdr[:])
	if err == io.EOF || err == nil && binary.LittleEndian.Uint64(hdr[:]) == 0 {
		return record{}, io.EOF // end of file, or the preallocated zeros after the last record
	}
	if err != nil {
		return record{}, sr.bad(fmt.Errorf("short frame header (%d bytes)", n), true)
	}
	recBytes, padBytes := frameLength(binary.LittleEndian.Uint64(hdr[:]))
	if recBytes+padBytes > sr.size-sr.off-frameSize {
		// Only an append of a record bigger than the rest of the file, cut short, explains this;
		// its own encoding then agrees with the length. A damaged length field rarely does.
		head, _ := sr.r.Peek(int(min(sectorSize, sr.size-sr.off-frameSize)))
		return record{}, sr.bad(fmt.Errorf("record of %d bytes runs past the end of the file", recBytes),
			sr.last && lengthAgrees(head, sr.off+frameSize, recBytes))
	}
	data := make([]byte, recBytes+padBytes)
	if _, err := io.ReadFull(sr.r, data); err != nil {
		return record{}, sr.bad(fmt.Errorf("read record: %w", err), true)
	}
	rec, err := unmarshalRecord(data[:recBytes])
	if err != nil {
		return record{}, sr.bad(fmt.Errorf("undecodable record: %w", err), sr.tornRecord(data, recBytes))
	}
	if rec.typ == recCRC {
		if *crc != 0 && rec.crc != *crc {
			return record{}, sr.bad(fmt.Errorf("%w: segment starts with crc %08x, the previous one ended with %08x", errCRC, rec.crc, *crc), false)
		}
		*crc = rec.crc
	} else {
		next := crc32.Update(*crc, crcTable, rec.data)
		if rec.crc != next {
			return record{}, sr.bad(errCRC, sr.tornRecord(data, recBytes))
		}
		*crc = next
	}
	sr.off += frameSize + recBytes + padBytes
	return rec, nil
}

// tornRecord says whether a record that fails to decode, read whole from the last segment, is
// what an interrupted final append leaves: some of its sectors never written, its encoding in
// agreement with its length field, and nothing written after it. A damaged byte in the middle
// of the log fails the last two (the records after it are still there), so it is reported as
// corruption instead of being cut off with every record behind it.
func (sr *segmentReader) tornRecord(data []byte, recBytes int64) bool {
	start := sr.off + frameSize
	return sr.last && hasZeroSector(data, start) && lengthAgrees(data, start, recBytes) && sr.restIsZero()
}

// restIsZero reads the segment to its end and reports whether every byte left is zero.
func (sr *segmentReader) restIsZero() bool {
	buf := make([]byte, 1<<16)
	for {
		n, err := sr.r.Read(buf)
		for _, c := range buf[:n] {
			if c != 0 {
				return false
			}
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// bad classifies a record that cannot be read: an interrupted write if the segment is the last
// one and the damage looks like one, corruption otherwise.
func (sr *segmentReader) bad(err error, tornLike bool) error {
	if sr.last && tornLike {
		return fmt.Errorf("%w: %s at offset %d: %v", errTorn, sr.path, sr.off, err)
	}
	return fmt.Errorf("%w: %s at offset %d: %v", ErrCorrupt, sr.path, sr.off, err)
}

func openSegmentReader(path string, f *os.File, last bool) (*segmentReader, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("wal: stat %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("wal: seek %s: %w", path, err)
	}
	return &segmentReader{path: path, size: fi.Size(), r: bufio.NewReaderSize(f, 1<<20), last: last}, nil
}

// lockFile takes upstream's lock on a WAL file: an open-file-description write lock on Linux,
// so an upstream etcd and ours refuse to share a WAL either way round.
func lockFile(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EINVAL) {
		// A kernel without OFD locks: upstream falls back to flock there too.
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		return fmt.Errorf("%w: %s", ErrLocked, f.Name())
	}
	return nil
}

// preallocate makes f size bytes long with its blocks allocated, so a full disk shows up when a
// segment is made rather than in the middle of an append.
func preallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINTR) {
		fi, serr := f.Stat()
		if serr != nil {
			return fmt.Errorf("wal: stat %s: %w", f.Name(), serr)
		}
		if fi.Size() >= size {
			return nil
		}
		err = f.Truncate(size)
	}
	if err != nil {
		return fmt.Errorf("wal: preallocate %s: %w", f.Name(), err)
	}
	return nil
}

// newSegmentFile creates, locks and preallocates a segment file at path.
func newSegmentFile(path string, size int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := preallocate(f, size); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// syncDir is fileutil.SyncDir naming the WAL in its error.
func syncDir(dir string) error {
	if err := fileutil.SyncDir(dir); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	return nil
}

// keepCopy saves the segment as <name>.broken before a torn tail is cut off, as upstream's
// repair does, so the cut bytes can still be examined.
func keepCopy(f *os.File, path string) error {
	dst, err := os.OpenFile(path+".broken", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("wal: create %s.broken: %w", filepath.Base(path), err)
	}
	defer dst.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("wal: seek %s: %w", path, err)
	}
	if _, err := io.Copy(dst, f); err != nil {
		return fmt.Errorf("wal: copy %s: %w", path, err)
	}
	return dst.Sync()
}
