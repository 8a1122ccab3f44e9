package mvcc

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/schema"
)

// recordAt finds what a search finds, from any place of the cursor, whether it steps or searches.
func TestRecordAtFindsWhatSeekFinds(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(main, sub int64, tombstone bool) []byte {
		return schema.RevisionKey(schema.Revision{Main: main, Sub: sub}, tombstone)
	}
	stored := [][]byte{key(5, 0, false), key(5, 1, false), key(5, 2, false), key(6, 0, false), key(6, 1, true), key(9, 0, false), key(20, 0, false)}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("k"))
		for _, k := range stored {
			if err == nil {
				err = b.Put(k, append([]byte("v"), k...))
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		at, want, end []byte // at nil: not placed; end: where the cursor ends (nil: past the end)
	}{
		{"not placed", nil, key(5, 1, false), key(5, 1, false)},
		{"the next record", key(5, 0, false), key(5, 1, false), key(5, 1, false)},
		{"past the next", key(5, 0, false), key(5, 2, false), key(5, 2, false)},
		{"the next transaction's", key(5, 2, false), key(6, 0, false), key(6, 0, false)},
		{"a tombstone", key(6, 0, false), key(6, 1, true), key(6, 1, true)},
		{"not stored, one transaction on", key(6, 0, false), key(7, 0, false), key(9, 0, false)},
		{"far on", key(9, 0, false), key(20, 0, false), key(20, 0, false)},
		{"the cursor's own", key(9, 0, false), key(9, 0, false), key(9, 0, false)},
		{"behind", key(20, 0, false), key(5, 0, false), key(5, 0, false)},
		{"past the end", key(20, 0, false), key(21, 0, false), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := db.View(func(tx *bolt.Tx) error {
				c := tx.Bucket([]byte("k")).Cursor()
				var at []byte
				if tc.at != nil {
					at, _ = c.Seek(tc.at)
				}
				k, v := recordAt(c, at, tc.want)
				if !bytes.Equal(k, tc.end) || (k != nil && !bytes.Equal(v, append([]byte("v"), k...))) {
					return fmt.Errorf("at %x looking for %x: cursor at %x (%q), want %x", tc.at, tc.want, k, v, tc.end)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Ranges, whole and in pages at one revision, answer what a model of the history holds, with
// keys written in order (whose records lie one after the other) and rewritten and deleted at
// random (whose do not), before and after the writes reach the database.
func TestRangesAnswerTheModel(t *testing.T) {
	be, s := openStore(t, filepath.Join(t.TempDir(), "db"))
	rng := rand.New(rand.NewPCG(3, 5))
	const keys = 200
	history := []map[string]string{{}, {}} // the live keys at each revision (1: the empty store)
	write := func(fn func(w *TxnWrite) error) {
		w := s.Write()
		if err := fn(w); err != nil {
			t.Fatal(err)
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < keys; i += 4 { // in key order, four keys per revision
		write(func(w *TxnWrite) error {
			next := maps.Clone(history[len(history)-1])
			for j := i; j < i+4; j++ {
				k, v := fmt.Sprintf("k%04d", j), fmt.Sprintf("v%d-%d", j, len(history))
				if err := w.Put([]byte(k), []byte(v), 0); err != nil {
					return err
				}
				next[k] = v
			}
			history = append(history, next)
			return nil
		})
	}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("k%04d", rng.IntN(keys+20))
		write(func(w *TxnWrite) error {
			next := maps.Clone(history[len(history)-1])
			if rng.IntN(4) == 0 {
				n, err := w.DeleteRange([]byte(k), nil)
				if err == nil && n == 0 {
					return nil // no change, no revision
				}
				delete(next, k)
				history = append(history, next)
				return err
			}
			v := fmt.Sprintf("v%d", len(history))
			next[k] = v
			history = append(history, next)
			return w.Put([]byte(k), []byte(v), 0)
		})
		if i == 150 {
			if err := be.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := s.Rev(), int64(len(history)-1); got != want {
		t.Fatalf("revision %d, model %d", got, want)
	}
	check := func(when string) {
		for round := 0; round < 200; round++ {
			rev := 1 + rng.Int64N(s.Rev())
			from, to := fmt.Sprintf("k%04d", rng.IntN(keys)), fmt.Sprintf("k%04d", keys/2+rng.IntN(keys))
			var want []string
			for k, v := range history[rev] {
				if k >= from && k < to {
					want = append(want, k+"="+v)
				}
			}
			slices.Sort(want)
			limit := int64(rng.IntN(40))
			var got []string
			key := from
			for {
				v := s.Read()
				r, err := v.Range([]byte(key), []byte(to), RangeOptions{Rev: rev, Limit: limit})
				v.End()
				if err != nil {
					t.Fatal(err)
				}
				if r.Count != len(want)-len(got) {
					t.Fatalf("%s: range [%s, %s) at %d from %s: count %d, model %d", when, from, to, rev, key, r.Count, len(want)-len(got))
				}
				for _, kv := range r.KVs {
					got = append(got, string(kv.Key)+"="+string(kv.Value))
				}
				if limit == 0 || len(r.KVs) < int(limit) || len(got) == len(want) {
					break
				}
				key = string(r.KVs[len(r.KVs)-1].Key) + "\x00"
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: range [%s, %s) at %d in pages of %d:\n got %v\nwant %v", when, from, to, rev, limit, got, want)
			}
		}
	}
	check("some writes buffered")
	if err := be.Commit(); err != nil {
		t.Fatal(err)
	}
	check("all in the database")
}
