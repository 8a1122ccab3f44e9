package mvcc

import (
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
