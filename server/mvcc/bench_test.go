package mvcc

import (
	"fmt"
	"path/filepath"
	"testing"

	"etcdx/server/schema"
)

// The hot paths of the store, for a quick check of a change before `make bench` (go test -bench
// . -benchmem ./mvcc). The backend commits on its own interval, as in a member.

// BenchmarkPut: one put of a 256-byte value per write transaction, to 1,000 distinct keys.
func BenchmarkPut(b *testing.B) {
	_, s := openStore(b, filepath.Join(b.TempDir(), "db"))
	keys := benchKeys(1000)
	val := make([]byte, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := s.Write()
		if err := w.Put(keys[i%len(keys)], val, 0); err != nil {
			b.Fatal(err)
		}
		if err := w.End(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRangeOne reads one key of 10,000; BenchmarkRangeHundred, 100 consecutive keys.
func BenchmarkRangeOne(b *testing.B)     { benchRange(b, 1) }
func BenchmarkRangeHundred(b *testing.B) { benchRange(b, 100) }

func benchRange(b *testing.B, n int) {
	_, s := openStore(b, filepath.Join(b.TempDir(), "db"))
	keys := benchKeys(10000)
	w := s.Write()
	for _, k := range keys {
		if err := w.Put(k, make([]byte, 256), 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.End(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		from := (i * 7919) % (len(keys) - n)
		var end []byte
		if n > 1 {
			end = keys[from+n]
		}
		r, err := s.Range(keys[from], end, RangeOptions{})
		if err != nil || len(r.KVs) != n {
			b.Fatalf("range of %d: %d keys, %v", n, len(r.KVs), err)
		}
	}
}

// BenchmarkWatchFanOut: one put delivered to 100 watchers of its key, each on its own stream.
func BenchmarkWatchFanOut(b *testing.B) {
	_, s := openStore(b, filepath.Join(b.TempDir(), "db"))
	const watchers = 100
	streams := make([]*WatchStream, watchers)
	for i := range streams {
		streams[i] = s.NewWatchStream()
		defer streams[i].Close()
		if _, err := streams[i].Watch(0, []byte("hot"), nil, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := s.Write()
		if err := w.Put([]byte("hot"), []byte("v"), 0); err != nil {
			b.Fatal(err)
		}
		if err := w.End(); err != nil {
			b.Fatal(err)
		}
		for _, ws := range streams {
			<-ws.Chan()
		}
	}
}

func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key/%08d", i))
	}
	return keys
}

// BenchmarkIndexLookup finds one key of a million in the index; BenchmarkIndexPut puts a new
// revision of one of them; BenchmarkIndexVisit walks 100 consecutive keys.
func BenchmarkIndexLookup(b *testing.B) {
	benchIndex(b, func(ti *treeIndex, k []byte) { ti.lookup(k) })
}
func BenchmarkIndexPut(b *testing.B) {
	rev := int64(2_000_000)
	benchIndex(b, func(ti *treeIndex, k []byte) { rev++; ti.put(k, schema.Revision{Main: rev}) })
}
func BenchmarkIndexVisit(b *testing.B) {
	benchIndex(b, func(ti *treeIndex, k []byte) {
		n := 0
		ti.visit(k, []byte{}, func(*keyIndex) bool { n++; return n < 100 })
	})
}

func benchIndex(b *testing.B, op func(ti *treeIndex, k []byte)) {
	keys := benchKeys(1_000_000)
	ti := newTreeIndex()
	for i, k := range keys {
		ti.put(k, schema.Revision{Main: int64(i + 2)})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op(ti, keys[(i*7919)%len(keys)])
	}
}
