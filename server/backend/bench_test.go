package backend

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkCommit: a batch of 100 puts of 256 bytes, then the commit (bbolt's commit and its
// fsync), as the backend's interval commit does under load (go test -bench . ./backend).
func BenchmarkCommit(b *testing.B) {
	be, err := Open(Config{Path: filepath.Join(b.TempDir(), "db"), Buckets: [][]byte{testBucket}, BatchInterval: 3600e9, BatchLimit: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	val := make([]byte, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := be.Batch()
		for j := 0; j < 100; j++ {
			if err := t.Put(testBucket, []byte(fmt.Sprintf("k%06d", (i*100+j)%100000)), val); err != nil {
				b.Fatal(err)
			}
		}
		if err := t.Unlock(); err != nil {
			b.Fatal(err)
		}
		if err := be.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
