// Package snap stores raft snapshots as upstream etcd does: %016x-%016x.snap files (term, index)
// holding a snappb.Snapshot (the CRC-32C of the data, then the marshalled raftpb.Snapshot), written
// atomically. The snapshot's data is the v2-store document (see package v2store); the key-value
// data is the bbolt file itself.
package snap

import (
	"errors"
	"etcdx/server/fileutil"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// Upstream's errors, with its texts.
var (
	ErrNoSnapshot    = errors.New("snap: no available snapshot")
	ErrEmptySnapshot = errors.New("snap: empty snapshot")
	ErrCRCMismatch   = errors.New("snap: crc mismatch")
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Save writes s durably into dir.
func Save(dir string, s raftpb.Snapshot) error {
	_, err := SaveTimed(dir, s)
	return err
}

// Timings is how long Save spent encoding the snapshot and in fsync (for metrics).
type Timings struct{ Marshal, Fsync time.Duration }

// SaveTimed is Save, reporting where the time went.
func SaveTimed(dir string, s raftpb.Snapshot) (Timings, error) {
	var tm Timings
	start := time.Now()
	body, err := s.Marshal()
	if err != nil {
		return tm, fmt.Errorf("snap: marshal: %w", err)
	}
	tm.Marshal = time.Since(start)
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(crc32.Checksum(body, crcTable)))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, body)
	name := fmt.Sprintf("%016x-%016x.snap", s.Metadata.Term, s.Metadata.Index)
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
	if err != nil {
		return tm, fmt.Errorf("snap: create: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return tm, fmt.Errorf("snap: write: %w", err)
	}
	syncStart := time.Now()
	if err := f.Sync(); err != nil {
		f.Close()
		return tm, fmt.Errorf("snap: fsync: %w", err)
	}
	tm.Fsync = time.Since(syncStart)
	f.Close()
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return tm, fmt.Errorf("snap: rename: %w", err)
	}
	return tm, fileutil.SyncDir(dir)
}

// Load reads and verifies one snapshot file.
func Load(path string) (raftpb.Snapshot, error) {
	var s raftpb.Snapshot
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("snap: read: %w", err)
	}
	if len(b) == 0 {
		return s, fmt.Errorf("%w: %s", ErrEmptySnapshot, path)
	}
	crc, data, err := decodeFile(b)
	if err != nil {
		return s, fmt.Errorf("snap: %s: %w", path, err)
	}
	if len(data) == 0 || crc == 0 {
		return s, fmt.Errorf("%w: %s", ErrEmptySnapshot, path)
	}
	if crc32.Checksum(data, crcTable) != crc {
		return s, fmt.Errorf("%w: %s", ErrCRCMismatch, path)
	}
	if err := s.Unmarshal(data); err != nil {
		return s, fmt.Errorf("snap: %s: %w", path, err)
	}
	return s, nil
}

// decodeFile splits a snappb.Snapshot into its crc and data.
func decodeFile(b []byte) (crc uint32, data []byte, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, nil, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, nil, protowire.ParseError(n)
			}
			crc, b = uint32(v), b[n:]
		case num == 2 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return 0, nil, protowire.ParseError(n)
			}
			data, b = v, b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return 0, nil, protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return crc, data, nil
}

// List returns the snapshot file paths in dir, newest first.
func List(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("snap: read dir: %w", err)
	}
	var names []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ".snap") {
			names = append(names, de.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	for i := range names {
		names[i] = filepath.Join(dir, names[i])
	}
	return names, nil
}

// Purge keeps the newest keep snapshot files and removes the rest.
func Purge(dir string, keep int) error {
	if keep <= 0 {
		return nil // unlimited
	}
	names, err := List(dir)
	if err != nil {
		return err
	}
	for i := keep; i < len(names); i++ {
		if err := os.Remove(names[i]); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("snap: purge: %w", err)
		}
	}
	return nil
}
