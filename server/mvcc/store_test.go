package mvcc

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"etcdx/server/backend"
	"etcdx/server/schema"
)

func openStore(t testing.TB, path string) (*backend.Backend, *Store) {
	t.Helper()
	be, err := backend.Open(backend.Config{Path: path, Buckets: schema.Buckets})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(be, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); be.Close() }) // the store's background work ends before its backend
	return be, s
}

func put(t *testing.T, s *Store, k, v string) {
	t.Helper()
	w := s.Write()
	if err := w.Put([]byte(k), []byte(v), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
}

func TestPutRangeDeleteCompactRestore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	be, s := openStore(t, path)
	put(t, s, "a", "1") // revision 2: revision 1 is the empty store
	put(t, s, "a", "2")
	put(t, s, "b", "3")
	w := s.Write()
	if n, err := w.DeleteRange([]byte("b"), nil); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	w.End()
	put(t, s, "b", "4")
	if s.Rev() != 6 {
		t.Fatalf("rev = %d", s.Rev())
	}
	r, err := s.Range([]byte("a"), []byte{}, RangeOptions{})
	if err != nil || len(r.KVs) != 2 {
		t.Fatalf("range all: %+v %v", r, err)
	}
	if kv := r.KVs[0]; string(kv.Value) != "2" || kv.Version != 2 || kv.CreateRevision != 2 || kv.ModRevision != 3 {
		t.Fatalf("a = %+v", kv)
	}
	if kv := r.KVs[1]; kv.Version != 1 || kv.CreateRevision != 6 {
		t.Fatalf("b after recreate = %+v", kv)
	}
	r, _ = s.Range([]byte("b"), nil, RangeOptions{Rev: 4})
	if len(r.KVs) != 1 || string(r.KVs[0].Value) != "3" {
		t.Fatalf("b at rev 3 = %+v", r.KVs)
	}
	r, _ = s.Range([]byte("b"), nil, RangeOptions{Rev: 5})
	if len(r.KVs) != 0 {
		t.Fatalf("b at rev 4 should be deleted: %+v", r.KVs)
	}
	if _, err := s.Range([]byte("a"), nil, RangeOptions{Rev: 9}); !errors.Is(err, ErrFutureRev) {
		t.Fatalf("future rev: %v", err)
	}
	h1, _, _, _, err := s.HashKV(0)
	if err != nil {
		t.Fatal(err)
	}
	done, err := s.Compact(5)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := s.Range([]byte("a"), nil, RangeOptions{Rev: 4}); !errors.Is(err, ErrCompacted) {
		t.Fatalf("compacted rev: %v", err)
	}
	if _, err := s.Compact(4); !errors.Is(err, ErrCompacted) {
		t.Fatalf("compact again: %v", err)
	}
	r, _ = s.Range([]byte("a"), nil, RangeOptions{Rev: 5})
	if len(r.KVs) != 1 || string(r.KVs[0].Value) != "2" {
		t.Fatalf("a at compact rev: %+v", r.KVs)
	}
	h2, _, _, _, _ := s.HashKV(0)
	if h1 == h2 {
		t.Fatal("hash did not change after compaction removed history")
	}
	s.Close()
	be.Close()

	_, s = openStore(t, path)
	if s.Rev() != 6 || s.CompactRev() != 5 {
		t.Fatalf("after restore rev=%d compact=%d", s.Rev(), s.CompactRev())
	}
	r, _ = s.Range([]byte("a"), []byte{}, RangeOptions{})
	if len(r.KVs) != 2 || r.KVs[0].Version != 2 || r.KVs[1].CreateRevision != 6 {
		t.Fatalf("after restore: %+v", r.KVs)
	}
	h3, _, _, _, _ := s.HashKV(0)
	if h3 != h2 {
		t.Fatalf("hash changed across restart: %x vs %x", h2, h3)
	}
}

func TestWatchLiveHistoricalAndCompacted(t *testing.T) {
	_, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	put(t, s, "k1", "a")
	put(t, s, "k2", "b")
	ws := s.NewWatchStream()
	defer ws.Close()
	hist, _ := ws.Watch(0, []byte("k"), []byte("l"), 1)
	live, _ := ws.Watch(0, []byte("k1"), nil, 0)
	got := map[int64][]Event{}
	recv := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case r := <-ws.Chan():
				got[r.WatchID] = append(got[r.WatchID], r.Events...)
			case <-time.After(3 * time.Second):
				t.Fatalf("timed out waiting for watch responses: %+v", got)
			}
		}
	}
	recv(1)
	if len(got[hist]) != 2 {
		t.Fatalf("historical events = %+v", got[hist])
	}
	w := s.Write()
	w.DeleteRange([]byte("k1"), nil)
	w.End()
	recv(2)
	if ev := got[live]; len(ev) != 1 || ev[0].Type != mvccpb.DELETE || ev[0].KV.ModRevision != 4 {
		t.Fatalf("live events = %+v", ev)
	}
	put(t, s, "x", "1")
	s.Compact(5)
	ws.Watch(0, []byte("k"), nil, 2)
	select {
	case r := <-ws.Chan():
		if r.CompactRevision != 5 {
			t.Fatalf("want compacted response, got %+v", r)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no compaction cancel")
	}
}

// waitCompacted waits for a compaction's backend clean-up to finish.
func waitCompacted(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("compaction did not finish")
	}
}

// storedRevisions commits be and counts the revisions its key bucket holds.
func storedRevisions(t *testing.T, be *backend.Backend) int {
	t.Helper()
	if err := be.Commit(); err != nil {
		t.Fatal(err)
	}
	stored := 0
	if err := be.View(func(tx *bolt.Tx) error {
		return tx.Bucket(schema.Key).ForEach(func(k, v []byte) error { stored++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return stored
}

// A compaction whose index spans several chunks (reads and writes may run between them)
// leaves each live key's latest value and nothing else, with writes going on meanwhile.
func TestCompactionAcrossIndexChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	be, s := openStore(t, path)
	keys := 3*indexCompactionChunk + 5
	name := func(i int) string { return fmt.Sprintf("k%04d", i) }
	for round := 0; round < 2; round++ {
		for i := 0; i < keys; i++ {
			put(t, s, name(i), fmt.Sprint(round))
		}
	}
	deleted := 0
	for i := 0; i < keys; i += 4 {
		w := s.Write()
		if n, err := w.DeleteRange([]byte(name(i)), nil); err != nil || n != 1 {
			t.Fatalf("delete %s: %d %v", name(i), n, err)
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	at := s.Rev()
	done, err := s.Compact(at)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < keys; i += 7 { // writes between the chunks
		put(t, s, "after/"+name(i), "x")
	}
	waitCompacted(t, done)
	live := keys - deleted
	r, err := s.Range([]byte("k"), []byte("l"), RangeOptions{Rev: at})
	if err != nil || len(r.KVs) != live {
		t.Fatalf("range at the compacted revision: %v, %d keys, want %d", err, len(r.KVs), live)
	}
	for _, kv := range r.KVs {
		if string(kv.Value) != "1" || kv.Version != 2 {
			t.Fatalf("%s = %q version %d, want the second value", kv.Key, kv.Value, kv.Version)
		}
	}
	if _, err := s.Range([]byte("k"), []byte("l"), RangeOptions{Rev: at - 1}); !errors.Is(err, ErrCompacted) {
		t.Fatalf("range below the compacted revision: %v, want ErrCompacted", err)
	}
	stored := storedRevisions(t, be)
	if after := (keys + 6) / 7; stored != live+after {
		t.Fatalf("%d revisions stored, want %d (each live key's latest and the %d later writes)", stored, live+after, after)
	}
}

// A compaction in small batches deletes every superseded revision, keeps the rest (many kept
// revisions follow the last deleted one) and records that it finished.
func TestCompactionInSmallBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	be, s := openStore(t, path)
	s.SetCompactionPace(3, 0)
	const keys = 20
	for round := 0; round < 2; round++ {
		for i := 0; i < keys; i++ {
			put(t, s, string(rune('a'+i)), string(rune('0'+round)))
		}
	}
	done, err := s.Compact(s.Rev())
	if err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, done)
	stored := storedRevisions(t, be)
	if stored != keys {
		t.Fatalf("%d revisions stored after the compaction, want %d (one per key)", stored, keys)
	}
	r, err := s.Range([]byte("a"), []byte{}, RangeOptions{})
	if err != nil || r.Count != keys || string(r.KVs[keys-1].Value) != "1" {
		t.Fatalf("after compaction: %v, %+v", err, r)
	}
	s.Close()
	be.Close()
	// Finished: a restart has no compaction to resume and the same history.
	_, s = openStore(t, path)
	if s.CompactRev() != 2*keys+1 {
		t.Fatalf("compact revision after restart %d, want %d", s.CompactRev(), 2*keys+1)
	}
}
