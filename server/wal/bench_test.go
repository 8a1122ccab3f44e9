package wal

import (
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// BenchmarkSave: one Ready's worth of the WAL's work, 8 entries of 256 bytes with a new commit
// index, fsynced, as the raft loop saves them (go test -bench . ./wal). The disk's fsync time
// dominates; ns/op on tmpfs measures the encoding alone.
func BenchmarkSave(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "wal"), []byte("meta"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ents := make([]raftpb.Entry, 8)
	for i := range ents {
		ents[i].Data = make([]byte, 256)
		ents[i].Term = 1
	}
	index := uint64(0)
	b.SetBytes(8 * 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range ents {
			index++
			ents[j].Index = index
		}
		if err := w.Save(raftpb.HardState{Term: 1, Commit: index}, ents); err != nil {
			b.Fatal(err)
		}
	}
}
