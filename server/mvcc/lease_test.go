package mvcc_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"etcdx/server/backend"
	"etcdx/server/lease"
	"etcdx/server/mvcc"
	"etcdx/server/schema"
)

// TestPutsMoveKeysBetweenLeases follows a key through puts with other leases, without one, a
// delete and a reopen: the lessor, not the old value, says which lease a put detaches it from.
func TestPutsMoveKeysBetweenLeases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	open := func() (*backend.Backend, *lease.Lessor, *mvcc.Store) {
		be, err := backend.Open(backend.Config{Path: path, Buckets: schema.Buckets})
		if err != nil {
			t.Fatal(err)
		}
		les, err := lease.New(be, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := mvcc.Open(be, slog.Default(), les)
		if err != nil {
			t.Fatal(err)
		}
		return be, les, s
	}
	be, les, s := open()
	b := be.Batch()
	for _, id := range []int64{1, 2} {
		if _, err := les.Grant(b, id, 60); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	write := func(step string, fn func(w *mvcc.TxnWrite) error) {
		t.Helper()
		w := s.Write()
		if err := fn(w); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if err := w.End(); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	put := func(k string, id int64) func(w *mvcc.TxnWrite) error {
		return func(w *mvcc.TxnWrite) error { return w.Put([]byte(k), []byte("v"), id) }
	}
	check := func(step string, want map[int64][]string) {
		t.Helper()
		for _, id := range []int64{1, 2} {
			keys, err := les.Keys(id)
			if err != nil {
				t.Fatalf("%s: keys of %d: %v", step, id, err)
			}
			var got []string
			for _, k := range keys {
				got = append(got, string(k))
			}
			if len(got) != len(want[id]) {
				t.Fatalf("%s: lease %d holds %q, want %q", step, id, got, want[id])
			}
			for i := range got {
				if got[i] != want[id][i] {
					t.Fatalf("%s: lease %d holds %q, want %q", step, id, got, want[id])
				}
			}
			for _, k := range got {
				if les.LeaseOf([]byte(k)) != id {
					t.Fatalf("%s: LeaseOf(%q) = %d, want %d", step, k, les.LeaseOf([]byte(k)), id)
				}
			}
		}
	}
	write("a on 1, b on 1", func(w *mvcc.TxnWrite) error {
		if err := put("a", 1)(w); err != nil {
			return err
		}
		return put("b", 1)(w)
	})
	check("a on 1, b on 1", map[int64][]string{1: {"a", "b"}})
	write("a on 2", put("a", 2))
	check("a on 2", map[int64][]string{1: {"b"}, 2: {"a"}})
	write("b without a lease", put("b", 0))
	check("b without a lease", map[int64][]string{2: {"a"}})
	if les.LeaseOf([]byte("b")) != 0 {
		t.Fatalf("b still hangs on lease %d", les.LeaseOf([]byte("b")))
	}
	write("c on 1 then on 2 in one transaction", func(w *mvcc.TxnWrite) error {
		if err := put("c", 1)(w); err != nil {
			return err
		}
		return put("c", 2)(w)
	})
	check("c on 1 then on 2 in one transaction", map[int64][]string{2: {"a", "c"}})
	write("delete a", func(w *mvcc.TxnWrite) error { _, err := w.DeleteRange([]byte("a"), nil); return err })
	check("delete a", map[int64][]string{2: {"c"}})
	if les.LeaseOf([]byte("a")) != 0 {
		t.Fatalf("deleted a still hangs on lease %d", les.LeaseOf([]byte("a")))
	}

	s.Close()
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}
	be, les, s = open()
	defer func() { s.Close(); be.Close() }()
	check("reopened", map[int64][]string{2: {"c"}})
	write("c on 1 after the reopen", put("c", 1))
	check("c on 1 after the reopen", map[int64][]string{1: {"c"}})
}
