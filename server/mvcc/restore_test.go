package mvcc

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"

	"etcdx/server/backend"
	"etcdx/server/schema"
)

// keyLeases is a LeaseAttacher that only remembers each key's lease.
type keyLeases map[string]int64

func (l keyLeases) Attach(lease int64, key []byte) { l[string(key)] = lease }
func (l keyLeases) Detach(lease int64, key []byte) {
	if l[string(key)] == lease {
		delete(l, string(key))
	}
}
func (l keyLeases) LeaseOf(key []byte) int64 { return l[string(key)] }

// restoreOneByOne is the index rebuild as the key bucket reads: each revision in order, looked
// up in the index by its key. The parallel rebuild must give the same index, revision and leases.
func restoreOneByOne(t *testing.T, be *backend.Backend) (*treeIndex, int64, map[string]int64) {
	t.Helper()
	idx, cur, leases := newTreeIndex(), int64(1), map[string]int64{}
	err := be.View(func(tx *bolt.Tx) error {
		return tx.Bucket(schema.Key).ForEach(func(k, v []byte) error {
			rev, tomb, err := schema.ParseRevisionKey(k)
			if err != nil {
				return err
			}
			var kv mvccpb.KeyValue
			if err := kv.Unmarshal(v); err != nil {
				return err
			}
			cur = max(cur, rev.Main)
			switch {
			case len(kv.Key) == 0:
			case tomb:
				switch ki := idx.lookup(kv.Key); {
				case ki == nil: // only the deletion is left: it stays until compacted past
					idx.tree.Set(&keyIndex{key: append([]byte(nil), kv.Key...), modified: rev,
						generations: []generation{{ver: 1, revs: []schema.Revision{rev}}, {}}})
				case ki.isLive():
					_ = ki.tombstone(rev)
				}
				delete(leases, string(kv.Key))
			default:
				ki := idx.lookup(kv.Key)
				if ki == nil {
					ki = &keyIndex{key: append([]byte(nil), kv.Key...)}
					idx.tree.Set(ki)
				}
				ki.restore(rev, schema.Revision{Main: kv.CreateRevision}, kv.Version)
				if kv.Lease != 0 {
					leases[string(kv.Key)] = kv.Lease
				} else {
					delete(leases, string(kv.Key))
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx, cur, leases
}

// indexEntries lists the index's entries in key order, for comparison.
func indexEntries(idx *treeIndex) []keyIndex {
	var out []keyIndex
	idx.tree.Scan(func(ki *keyIndex) bool {
		c := keyIndex{key: ki.key, modified: ki.modified}
		for _, g := range ki.generations {
			c.generations = append(c.generations, generation{ver: g.ver, created: g.created, revs: append([]schema.Revision{}, g.revs...)})
		}
		out = append(out, c)
		return true
	})
	return out
}

// TestRestoreInRangesAsOneByOne: seeded histories of puts (some under leases, some several in
// one transaction), single and range deletes, compactions and a revision marker with no key,
// restored from the closed file with the key bucket read in 1 to 7 revision ranges at once: the
// index, the current revision and the keys' leases are what reading it revision by revision
// gives, and the store reads as before it was closed.
func TestRestoreInRangesAsOneByOne(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			path := filepath.Join(t.TempDir(), "db")
			be, err := backend.Open(backend.Config{Path: path, Buckets: schema.Buckets})
			if err != nil {
				t.Fatal(err)
			}
			leases := keyLeases{}
			s, err := Open(be, slog.Default(), leases)
			if err != nil {
				t.Fatal(err)
			}
			key := func() []byte { return []byte(fmt.Sprintf("k%0*d", 1+rng.IntN(3), rng.IntN(60))) }
			for op := 0; op < 3000; op++ {
				rev := s.Rev()
				r := rng.IntN(20)
				if r == 18 {
					at := rev - rng.Int64N(rev/2+1)
					if at <= s.CompactRev() {
						continue
					}
					done, err := s.Compact(at)
					if err != nil {
						t.Fatal(err)
					}
					<-done
					continue
				}
				w := s.Write()
				switch {
				case r < 11:
					var lease int64
					if rng.IntN(4) == 0 {
						lease = 1 + rng.Int64N(3)
					}
					err = w.Put(key(), []byte(fmt.Sprint(op)), lease)
				case r < 14: // several changes in one revision
					for range 1 + rng.IntN(4) {
						if err = w.Put(key(), []byte("t"), 0); err != nil {
							break
						}
					}
				case r < 17:
					_, err = w.DeleteRange(key(), nil)
				case r < 18:
					from := key()
					_, err = w.DeleteRange(from, append(from, '5'))
				case r == 19:
					// A revision marker with no key, as snapshot restore --bump-revision writes.
					err = w.Batch().Put(schema.Key, schema.RevisionKey(schema.Revision{Main: rev + 1}, false), mustMarshal(t, &mvccpb.KeyValue{}))
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := w.End(); err != nil {
					t.Fatal(err)
				}
				if r == 19 {
					s.mu.Lock()
					s.currentRev++ // the marker's revision is taken
					s.mu.Unlock()
				}
			}
			before, err := s.Range([]byte{0}, []byte{}, RangeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantRev := s.Rev()
			s.Close()
			if err := be.Close(); err != nil {
				t.Fatal(err)
			}

			be, err = backend.Open(backend.Config{Path: path, Buckets: schema.Buckets})
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			wantIdx, wantCur, wantLeases := restoreOneByOne(t, be)
			var first, last int64
			be.View(func(tx *bolt.Tx) error {
				c := tx.Bucket(schema.Key).Cursor()
				k, _ := c.First()
				lo, _, _ := schema.ParseRevisionKey(k)
				k, _ = c.Last()
				hi, _, _ := schema.ParseRevisionKey(k)
				first, last = lo.Main, hi.Main
				return nil
			})
			for ranges := 1; ranges <= 7; ranges++ {
				got := keyLeases{}
				s := &Store{be: be, idx: newTreeIndex(), currentRev: 1, leases: got}
				if err := s.restoreIndex(first, last, ranges); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(indexEntries(s.idx), indexEntries(wantIdx)) {
					t.Fatalf("%d ranges: index\n%v\nreading one by one:\n%v", ranges, indexEntries(s.idx), indexEntries(wantIdx))
				}
				if s.currentRev != wantCur || !reflect.DeepEqual(map[string]int64(got), wantLeases) {
					t.Fatalf("%d ranges: revision %d, leases %v; one by one: %d, %v", ranges, s.currentRev, got, wantCur, wantLeases)
				}
			}
			s, err = Open(be, slog.Default(), keyLeases{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			after, err := s.Range([]byte{0}, []byte{}, RangeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Rev() != wantRev || !reflect.DeepEqual(after.KVs, before.KVs) {
				t.Fatalf("after reopening: revision %d (want %d), %d keys (want %d)", s.Rev(), wantRev, len(after.KVs), len(before.KVs))
			}
			if len(leases) == 0 || len(wantLeases) == 0 {
				t.Fatalf("the history attached no key to a lease at the end: %v", leases)
			}
		})
	}
}

func mustMarshal(t *testing.T, kv *mvccpb.KeyValue) []byte {
	t.Helper()
	b, err := kv.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodedKeyLen: the key's length read from the head of an encoded KeyValue, as every
// writer puts the key first; 0 (the arena then grows as it must) for any other head.
func TestEncodedKeyLen(t *testing.T) {
	standard := mustMarshal(t, &mvccpb.KeyValue{Key: []byte("some/key"), CreateRevision: 5, Value: []byte("v")})
	keyLast := protowire.AppendTag(nil, kvCreateRevision, protowire.VarintType)
	keyLast = protowire.AppendVarint(keyLast, 5)
	keyLast = protowire.AppendTag(keyLast, kvKey, protowire.BytesType)
	keyLast = protowire.AppendBytes(keyLast, []byte("some/key"))
	for _, c := range []struct {
		name string
		v    []byte
		want int
	}{
		{"key first", standard, 8},
		{"key after another field", keyLast, 0},
		{"empty", nil, 0},
		{"cut inside the length", standard[:1], 0},
		{"length past the end", []byte{0x0a, 0x7f, 'k'}, 3},
	} {
		if got := encodedKeyLen(c.v); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
