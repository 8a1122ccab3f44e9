package wal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// seedSegment is the written part of a real segment (the preallocated zeros after it trimmed):
// metadata, hard states, entries and a snapshot marker.
func seedSegment(f *testing.F) []byte {
	dir := filepath.Join(f.TempDir(), "wal")
	w, err := Create(dir, []byte("meta"))
	if err != nil {
		f.Fatal(err)
	}
	w.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 2}, entries(1, 3, 1))
	w.SaveSnapshot(raftpb.SnapshotMetadata{Index: 2, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1}}})
	w.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: 4}, entries(4, 5, 2))
	w.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	b, err := os.ReadFile(segs[0])
	if err != nil {
		f.Fatal(err)
	}
	return bytes.TrimRight(b, "\x00")
}

// FuzzSegment: any bytes as the only segment of a WAL give entries or an error, never a panic.
func FuzzSegment(f *testing.F) {
	seed := seedSegment(f)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte{})
	dir := f.TempDir() // one per fuzzing process, whose runs are sequential
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, segmentName(0, 0)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		// A member's Open reads through the same scan; it is left out because it preallocates
		// 64 MB per run, which would leave the fuzzer a few runs a second.
		Inspect(dir)
		Entries(dir)
	})
}

// FuzzRecordPayloads: the payload decoders behind the CRC (which random bytes rarely pass)
// take any bytes.
func FuzzRecordPayloads(f *testing.F) {
	f.Add([]byte{0x08, 0x02, 0x10, 0x05, 0x1a, 0x02, 0x08, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &scanResult{}
		for _, typ := range []int64{recMetadata, recEntry, recState, recSnapshot, recCRC, 99} {
			r.apply(record{typ: typ, data: data}, raftpb.SnapshotMetadata{}, true, "fuzz")
		}
	})
}
