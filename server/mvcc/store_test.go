package mvcc

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
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
	// The last deletion is at the compacted revision: it stays (a watch from there sees it).
	if after := (keys + 6) / 7; stored != live+1+after {
		t.Fatalf("%d revisions stored, want %d (each live key's latest, the deletion at the compacted revision and the %d later writes)", stored, live+1+after, after)
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

// A stepped store's compaction waits for its caller: nothing is deleted until StepCompaction,
// each step after the index's takes one batch, and the compaction finishes with the same
// result and hash as one run in the background.
func TestSteppedCompactionWaitsForItsSteps(t *testing.T) {
	fill := func(s *Store) {
		for round := 0; round < 2; round++ {
			for i := 0; i < 20; i++ {
				put(t, s, string(rune('a'+i)), string(rune('0'+round)))
			}
		}
	}
	beA, stepped := openStore(t, filepath.Join(t.TempDir(), "db"))
	stepped.Stepped()
	stepped.SetCompactionPace(3, 0)
	_, background := openStore(t, filepath.Join(t.TempDir(), "db"))
	fill(stepped)
	fill(background)
	done, err := stepped.Compact(stepped.Rev())
	if err != nil {
		t.Fatal(err)
	}
	if n := storedRevisions(t, beA); n != 40 {
		t.Fatalf("%d revisions stored before any step, want all 40", n)
	}
	// One step for the index, then batches of 3 over 40 revisions: 14 (the last finds fewer).
	steps := 0
	for more := true; more; steps++ {
		select {
		case <-done:
			t.Fatalf("done after %d steps, with steps left", steps)
		default:
		}
		more = stepped.StepCompaction()
	}
	if steps != 15 {
		t.Fatalf("the compaction took %d steps, want 15", steps)
	}
	<-done
	if n := storedRevisions(t, beA); n != 20 {
		t.Fatalf("%d revisions stored after the compaction, want 20", n)
	}
	bgDone, err := background.Compact(background.Rev())
	if err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, bgDone)
	hs, _, _, _, err := stepped.HashKV(0)
	if err != nil {
		t.Fatal(err)
	}
	hb, _, _, _, err := background.HashKV(0)
	if err != nil {
		t.Fatal(err)
	}
	if hs != hb {
		t.Fatalf("stepped hash %d, background %d", hs, hb)
	}
	if stepped.StepCompaction() {
		t.Fatal("a step with nothing queued reports more")
	}
}

// TestRangeRecordsAsRange: the stored records RangeRecords hands on decode to what Range
// answers, at every revision, with and without a limit, with writes still in the store's
// buffer and after they reach the database; LastKey is the last key and Count the same.
func TestRangeRecordsAsRange(t *testing.T) {
	_, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("k%03d", rng.IntN(60))
		w := s.Write()
		if rng.IntN(5) == 0 {
			if _, err := w.DeleteRange([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
		} else if err := w.Put([]byte(k), []byte(strings.Repeat("v", rng.IntN(300))), int64(rng.IntN(3))); err != nil {
			t.Fatal(err)
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		for rev := int64(0); rev <= s.Rev(); rev += 17 {
			for _, limit := range []int64{0, 1, 7, 100} {
				for _, kr := range [][2]string{{"k", ""}, {"k010", "k030"}, {"k005", ""}, {"x", ""}} {
					ro := RangeOptions{Rev: rev, Limit: limit}
					want, err := s.Range([]byte(kr[0]), []byte(kr[1]), ro)
					if err != nil {
						t.Fatal(err)
					}
					v := s.Read()
					var got []mvccpb.KeyValue
					res, err := v.RangeRecords([]byte(kr[0]), []byte(kr[1]), ro, func(recs [][]byte) error {
						for _, rec := range recs {
							var kv mvccpb.KeyValue
							if err := kv.Unmarshal(rec); err != nil {
								return err
							}
							got = append(got, kv)
						}
						return nil
					})
					v.End()
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("%s: range %q-%q at %d limit %d", when, kr[0], kr[1], rev, limit)
					if len(got) != len(want.KVs) || res.Count != want.Count || res.Rev != want.Rev {
						t.Fatalf("%s: %d records, count %d, rev %d; Range: %d, %d, %d", name, len(got), res.Count, res.Rev, len(want.KVs), want.Count, want.Rev)
					}
					for i := range got {
						if got[i].String() != want.KVs[i].String() {
							t.Fatalf("%s: record %d is %v, Range has %v", name, i, &got[i], &want.KVs[i])
						}
					}
					if n := len(got); n > 0 && string(res.LastKey) != string(got[n-1].Key) {
						t.Fatalf("%s: LastKey %q, last record's key %q", name, res.LastKey, got[n-1].Key)
					}
				}
			}
		}
	}
	check("buffered")
	if err := s.be.Commit(); err != nil {
		t.Fatal(err)
	}
	check("committed")
}

// TestPaginatedCountsCarryOver: a list read page by page at one revision, with writes and
// deletes going on between the pages, answers every page's Count as a fresh count of the range
// from the page's start would, while each page after the first takes the count its predecessor
// left (the walk to the range's end is skipped); a page asked at another revision, or with
// another end, does not.
func TestPaginatedCountsCarryOver(t *testing.T) {
	_, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	for i := 0; i < 100; i++ {
		put(t, s, fmt.Sprintf("obj/%03d", i), "v")
	}
	rev := s.Rev()
	rng := rand.New(rand.NewPCG(3, 5))
	end := []byte("obj0")
	key := []byte("obj/")
	pages := 0
	for {
		ro := RangeOptions{Rev: rev, Limit: 7}
		if pages == 0 {
			ro.Rev = 0 // the first page reads the current revision, as a list does
		}
		v := s.Read()
		_, carried := s.pages.m[pageStart{key: string(key), end: string(end), rev: rev}]
		var got int
		res, err := v.RangeRecords(key, end, ro, func(recs [][]byte) error { got = len(recs); return nil })
		v.End()
		if err != nil {
			t.Fatal(err)
		}
		if pages > 0 && !carried {
			t.Fatalf("page %d (from %q) found no count carried from page %d", pages, key, pages-1)
		}
		if want := s.idx.count(key, end, rev); res.Count != want {
			t.Fatalf("page %d (from %q): Count %d, a fresh count says %d", pages, key, res.Count, want)
		}
		pages++
		if res.Count <= got {
			break
		}
		key = append(bytes.Clone(res.LastKey), 0)
		// Writes after the list's revision change nothing it reads.
		w := s.Write()
		k := []byte(fmt.Sprintf("obj/%03d", rng.IntN(120)))
		if rng.IntN(2) == 0 {
			if _, err := w.DeleteRange(k, nil); err != nil {
				t.Fatal(err)
			}
		} else if err := w.Put(k, []byte("w"), 0); err != nil {
			t.Fatal(err)
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
	}
	if pages != 15 {
		t.Fatalf("read %d pages of 7 from 100 keys, want 15", pages)
	}
	// Another revision or another end starts afresh, and answers its own count.
	v := s.Read()
	defer v.End()
	s.pages.put(pageStart{key: "obj/050", end: string(end), rev: rev}, 1)
	for _, tc := range []struct {
		end []byte
		rev int64
	}{{end, s.Rev()}, {[]byte("obj/090"), rev}} {
		res, err := v.RangeRecords([]byte("obj/050"), tc.end, RangeOptions{Rev: tc.rev, Limit: 5}, func([][]byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if want := s.idx.count([]byte("obj/050"), tc.end, tc.rev); res.Count != want {
			t.Fatalf("range to %q at %d: Count %d, want %d", tc.end, tc.rev, res.Count, want)
		}
	}
}

// A deletion at the compacted revision stays stored and indexed, across a restart, until a
// compaction past it, as upstream keeps it: a watch from the compacted revision still gets the
// event (upstream's TestResumeCompactionOnTombstone).
func TestTombstoneAtCompactedRevisionStays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	open := func() (*backend.Backend, *Store) {
		be, err := backend.Open(backend.Config{Path: path, Buckets: schema.Buckets})
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(be, slog.Default(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return be, s
	}
	be, s := open()
	put(t, s, "a", "1")
	put(t, s, "b", "1")
	w := s.Write()
	if _, err := w.DeleteRange([]byte("a"), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	del := s.Rev()
	done, err := s.Compact(del)
	if err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, done)
	if n := storedRevisions(t, be); n != 2 {
		t.Fatalf("%d revisions stored after compacting at the deletion, want 2 (b and a's deletion)", n)
	}
	s.Close()
	be.Close()

	be, s = open()
	defer func() { s.Close(); be.Close() }()
	if ki := s.idx.lookup([]byte("a")); ki == nil || len(ki.generations) != 2 || ki.generations[0].revs[0].Main != del {
		t.Fatalf("a's index entry after a restart: %+v, want its deletion at %d", ki, del)
	}
	if r, err := s.Range([]byte("a"), nil, RangeOptions{Rev: del}); err != nil || len(r.KVs) != 0 {
		t.Fatalf("a at the compacted revision: %v %v, want no key", r, err)
	}
	put(t, s, "b", "2")
	done, err = s.Compact(s.Rev())
	if err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, done)
	if n := storedRevisions(t, be); n != 1 {
		t.Fatalf("%d revisions stored after compacting past the deletion, want 1", n)
	}
	if ki := s.idx.lookup([]byte("a")); ki != nil {
		t.Fatalf("a still indexed after compacting past its deletion: %+v", ki)
	}
}

// TestStreamedPagesCountCarryOver: a list whose pages are each read as a stream (chunks that
// only ask whether more follow, then PageCount for the page's Count, as a RangeStream with a
// limit answers) gets every page's Count right while writes go on, and each page after the
// first takes its count from the one before, whether that page was streamed or read whole; a
// revision compacted since answers ErrCompacted.
func TestStreamedPagesCountCarryOver(t *testing.T) {
	_, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	for i := 0; i < 100; i++ {
		put(t, s, fmt.Sprintf("obj/%03d", i), "v")
	}
	rev := s.Rev()
	end := []byte("obj0")
	start := []byte("obj/")
	const page, chunk = 7, 3
	pages := 0
	for {
		_, carried := s.pages.m[pageStart{key: string(start), end: string(end), rev: rev}]
		var count int
		next := start
		if pages%4 == 3 {
			// Every fourth page is read whole, as a unary Range with a limit reads it.
			v := s.Read()
			res, err := v.RangeRecords(start, end, RangeOptions{Rev: rev, Limit: page}, func([][]byte) error { return nil })
			v.End()
			if err != nil {
				t.Fatal(err)
			}
			count = res.Count
			next = append(bytes.Clone(res.LastKey), 0)
		} else {
			sent, more := 0, true
			for more && sent < page {
				limit := min(chunk, page-sent)
				v := s.Read()
				res, err := v.RangeRecords(next, end, RangeOptions{Rev: rev, Limit: int64(limit), CountToLimit: true}, func(recs [][]byte) error { sent += len(recs); return nil })
				v.End()
				if err != nil {
					t.Fatal(err)
				}
				more = res.Count > limit // at most one past the limit: whether more follow
				next = append(bytes.Clone(res.LastKey), 0)
			}
			count = sent
			if more {
				v := s.Read()
				n, err := v.PageCount(start, next, end, rev, sent)
				v.End()
				if err != nil {
					t.Fatal(err)
				}
				count = n
			}
		}
		if pages > 0 && !carried {
			t.Fatalf("page %d (from %q) found no count carried from page %d", pages, start, pages-1)
		}
		if want := s.idx.count(start, end, rev); count != want {
			t.Fatalf("page %d (from %q): Count %d, a fresh count says %d", pages, start, count, want)
		}
		pages++
		if count <= page {
			break
		}
		start = next
		// Writes after the list's revision change nothing it reads.
		k := fmt.Sprintf("obj/%03d", (pages*37)%120)
		if pages%2 == 0 {
			w := s.Write()
			if _, err := w.DeleteRange([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
			if err := w.End(); err != nil {
				t.Fatal(err)
			}
		} else {
			put(t, s, k, "w")
		}
	}
	if pages != 15 {
		t.Fatalf("read %d pages of 7 from 100 keys, want 15", pages)
	}
	if _, err := s.Compact(s.Rev()); err != nil {
		t.Fatal(err)
	}
	v := s.Read()
	defer v.End()
	if _, err := v.PageCount(start, []byte("obj/099\x00"), end, rev, 1); !errors.Is(err, ErrCompacted) {
		t.Fatalf("PageCount at a compacted revision: %v, want ErrCompacted", err)
	}
}

// TestKeyRevisionsAsTheRecord: what the index tells of a key (create and mod revisions,
// version) is what its stored record carries, in a read view and in a write transaction before
// and after it changes the key, through updates, deletes, re-creations and a compaction; a key
// Range finds nothing for is not found. Txn compares on revisions and versions rely on it.
func TestKeyRevisionsAsTheRecord(t *testing.T) {
	_, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	rng := rand.New(rand.NewPCG(7, 11))
	keys := []string{"a", "b", "c", "d", "e"}
	type view interface {
		Range(key, end []byte, ro RangeOptions) (*RangeResult, error)
		KeyRevisions(key []byte) (create, mod, version int64, ok bool)
	}
	check := func(where string, v view) {
		t.Helper()
		for _, k := range append(keys, "never") {
			rr, err := v.Range([]byte(k), nil, RangeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c, m, ver, ok := v.KeyRevisions([]byte(k))
			if len(rr.KVs) == 0 {
				if ok || c != 0 || m != 0 || ver != 0 {
					t.Fatalf("%s: %q has no record, the index says %d/%d/%d %t", where, k, c, m, ver, ok)
				}
				continue
			}
			kv := rr.KVs[0]
			if !ok || c != kv.CreateRevision || m != kv.ModRevision || ver != kv.Version {
				t.Fatalf("%s: %q record %d/%d/%d, the index says %d/%d/%d %t", where, k, kv.CreateRevision, kv.ModRevision, kv.Version, c, m, ver, ok)
			}
		}
	}
	for step := 0; step < 200; step++ {
		k := []byte(keys[rng.IntN(len(keys))])
		w := s.Write()
		check(fmt.Sprintf("step %d, write txn before", step), w)
		if rng.IntN(3) == 0 {
			if _, err := w.DeleteRange(k, nil); err != nil {
				t.Fatal(err)
			}
		} else if err := w.Put(k, []byte(fmt.Sprint(step)), 0); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("step %d, write txn after", step), w)
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
		if step == 120 {
			done, err := s.Compact(s.Rev() - 3)
			if err != nil {
				t.Fatal(err)
			}
			<-done
		}
		v := s.Read()
		check(fmt.Sprintf("step %d, read view", step), v)
		v.End()
	}
}

// A read view's records are fetched and handed on without the store's lock: a write (the apply
// loop) goes through while a long read is still sending its page, which a read holding the lock
// to its end stalled (a page of 10,000 pods held every write 10-30 ms). The range's values stay
// those of its revision: the write's commit does not change what the pinned transaction holds.
func TestWritesDoNotWaitForAReadsRecords(t *testing.T) {
	be, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	for i := range 100 {
		put(t, s, fmt.Sprintf("k%03d", i), "old")
	}
	if err := be.Commit(); err != nil { // half the values from the file, half from the buffer
		t.Fatal(err)
	}
	for i := 50; i < 100; i++ {
		put(t, s, fmt.Sprintf("k%03d", i), "old")
	}
	v := s.Read()
	inFn, wrote := make(chan struct{}), make(chan error)
	go func() {
		<-inFn
		w := s.Write()
		err := w.Put([]byte("k000"), []byte("new"), 0)
		if err == nil {
			err = w.End()
		}
		if err == nil {
			err = be.Commit()
		}
		wrote <- err
	}()
	var got []string
	_, err := v.RangeRecords([]byte("k"), []byte("l"), RangeOptions{}, func(recs [][]byte) error {
		close(inFn)
		select {
		case err := <-wrote:
			if err != nil {
				return err
			}
		case <-time.After(time.Minute):
			return errors.New("the write waited for the read's records: the read held the store's lock")
		}
		for _, r := range recs {
			var kv mvccpb.KeyValue
			if err := kv.Unmarshal(r); err != nil {
				return err
			}
			got = append(got, string(kv.Value))
		}
		return nil
	})
	v.End()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 || got[0] != "old" {
		t.Fatalf("the read saw %d values, the first %q; want 100, all of the view's revision", len(got), got[0])
	}
	if r, err := s.Range([]byte("k000"), nil, RangeOptions{}); err != nil || string(r.KVs[0].Value) != "new" {
		t.Fatalf("after the read: %v %v", r, err)
	}
}

// A compaction scheduled while a view is open waits for it, as upstream's does for its reads:
// the view reads its revision whole to its end, and the compaction happens after.
func TestCompactionWaitsForOpenViews(t *testing.T) {
	_, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	put(t, s, "a", "1")
	v := s.Read()
	viewRev := v.Rev()
	put(t, s, "a", "2")
	put(t, s, "a", "3")
	compacted := make(chan error, 1)
	go func() {
		_, err := s.Compact(s.Rev())
		compacted <- err
	}()
	r, err := v.Range([]byte("a"), nil, RangeOptions{})
	if err != nil || len(r.KVs) != 1 || string(r.KVs[0].Value) != "1" {
		t.Fatalf("the view at %d read %v, %v; want a=1", viewRev, r, err)
	}
	if got := v.CompactRev(); got >= viewRev {
		t.Fatalf("compacted to %d under a view at %d", got, viewRev)
	}
	v.End()
	if err := <-compacted; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Range([]byte("a"), nil, RangeOptions{Rev: viewRev}); !errors.Is(err, ErrCompacted) {
		t.Fatalf("after the view: %v, want ErrCompacted", err)
	}
}
