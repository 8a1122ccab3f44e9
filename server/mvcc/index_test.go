package mvcc

import (
	"bytes"
	"fmt"
	"maps"
	"testing"

	"etcdx/server/schema"
)

// buildIndex writes n keys, each twice, deletes every third and writes every fifth again.
func buildIndex(t *testing.T, n int) *treeIndex {
	ti := newTreeIndex()
	rev := int64(1)
	next := func() schema.Revision { rev++; return schema.Revision{Main: rev} }
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	for round := 0; round < 2; round++ {
		for i := 0; i < n; i++ {
			ti.put(key(i), next())
		}
	}
	for i := 0; i < n; i += 3 {
		if err := ti.tombstone(key(i), next()); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 5 {
		ti.put(key(i), next())
	}
	return ti
}

func TestIndexCompactionInChunksEqualsAtOnce(t *testing.T) {
	const n = 40
	for _, atRev := range []int64{2, n + 5, 2*n + 1, 2*n + 10, 3 * n} {
		whole := buildIndex(t, n)
		want := whole.compact(atRev)
		for _, limit := range []int{1, 3, 7, n, 2 * n} {
			t.Run(fmt.Sprintf("rev %d by %d", atRev, limit), func(t *testing.T) {
				ti := buildIndex(t, n)
				keep := map[schema.Revision]struct{}{}
				calls := 0
				for from, done := []byte{}, false; !done; calls++ {
					from, done = ti.compactSome(atRev, from, limit, keep)
				}
				if min := (n + limit - 1) / limit; calls < min {
					t.Errorf("%d calls for %d keys by %d", calls, n, limit)
				}
				if !maps.Equal(keep, want) {
					t.Errorf("keep differs: %d revisions, want %d", len(keep), len(want))
				}
				if ti.len() != whole.len() {
					t.Errorf("%d keys left, want %d", ti.len(), whole.len())
				}
				for _, rev := range []int64{atRev, atRev + 1, 4 * n} {
					got, gotTotal := ti.revisions(nil, []byte("k"), []byte{}, rev, 0, true)
					exp, expTotal := whole.revisions(nil, []byte("k"), []byte{}, rev, 0, true)
					if gotTotal != expTotal || fmt.Sprint(got) != fmt.Sprint(exp) {
						t.Errorf("at %d: %d live keys, want %d", rev, gotTotal, expTotal)
					}
				}
			})
		}
	}
}

// count agrees with revisions' total for every range and revision of a history with deletions;
// revisions counting only to its limit gives the same first keys.
func TestIndexCountEqualsRevisionsTotal(t *testing.T) {
	const n = 40
	ti := buildIndex(t, n)
	ranges := [][2][]byte{{[]byte("k"), {}}, {[]byte("k000"), nil}, {[]byte("k003"), nil}, {[]byte("k010"), []byte("k020")}, {[]byte("z"), {}}}
	for _, r := range ranges {
		for rev := int64(1); rev <= 3*n+n/5+2; rev++ {
			all, total := ti.revisions(nil, r[0], r[1], rev, 0, true)
			if got := ti.count(r[0], r[1], rev); got != total {
				t.Fatalf("[%s, %q) at %d: count %d, revisions total %d", r[0], r[1], rev, got, total)
			}
			// Counting to the limit gives the same keys and a total of at most limit+1.
			for _, limit := range []int{1, 3, 10, 100} {
				got, upTo := ti.revisions(nil, r[0], r[1], rev, limit, false)
				if want := min(total, limit+1); upTo != want || len(got) != min(total, limit) {
					t.Fatalf("[%s, %q) at %d limit %d, counting to the limit: %d keys, total %d; want %d, %d", r[0], r[1], rev, limit, len(got), upTo, min(total, limit), want)
				}
				for i := range got {
					if string(got[i].key) != string(all[i].key) || got[i].rev != all[i].rev {
						t.Fatalf("[%s, %q) at %d limit %d: key %d is %q, want %q", r[0], r[1], rev, limit, i, got[i].key, all[i].key)
					}
				}
			}
		}
	}
}

// TestNewKeyIndexInOneAllocation: a new key's entry (up to 128-byte keys) is one object the
// collector follows, and it behaves as an entry grown by puts: its key, its revisions as they
// are added past the one inline, its versions and its generations after a deletion.
func TestNewKeyIndexInOneAllocation(t *testing.T) {
	for _, n := range []int{1, 31, 32, 33, 64, 65, 96, 100, 128, 129, 300} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte('a' + (i*7+n)%26)
		}
		want := 1.0
		if n > 128 {
			want = 2
		}
		if got := testing.AllocsPerRun(10, func() { newKeyIndex(key, schema.Revision{Main: 5}, schema.Revision{Main: 5}, 1) }); got != want {
			t.Errorf("%d-byte key: %v allocations, want %v", n, got, want)
		}
		ti := newTreeIndex()
		for rev := int64(2); rev <= 9; rev++ {
			ti.put(key, schema.Revision{Main: rev, Sub: rev % 2})
		}
		if err := ti.tombstone(key, schema.Revision{Main: 10}); err != nil {
			t.Fatal(err)
		}
		ti.put(key, schema.Revision{Main: 11})
		other := append([]byte(nil), key...)
		other[0]++
		ti.put(other, schema.Revision{Main: 12})
		ki := ti.lookup(key)
		if ki == nil || !bytes.Equal(ki.key, key) || len(ki.key) != cap(ki.key) {
			t.Fatalf("%d-byte key: entry %v", n, ki)
		}
		for rev := int64(2); rev <= 9; rev++ {
			mod, created, ver, err := ki.get(rev)
			if err != nil || mod.Main != rev || mod.Sub != rev%2 || created.Main != 2 || ver != rev-1 {
				t.Fatalf("%d-byte key at %d: %v %v %d %v", n, rev, mod, created, ver, err)
			}
		}
		if _, _, _, err := ki.get(10); err != errKeyNotFound {
			t.Fatalf("%d-byte key at its deletion: %v", n, err)
		}
		if mod, created, ver, err := ki.get(11); err != nil || mod.Main != 11 || created.Main != 11 || ver != 1 {
			t.Fatalf("%d-byte key recreated: %v %v %d %v", n, mod, created, ver, err)
		}
	}
}
