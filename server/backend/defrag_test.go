package backend

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

var otherBucket = []byte("other")

// model is a backend's content as the test expects it: bucket -> key -> value.
type model map[string]map[string]string

// defragFixture is a backend and the content it must hold, written through the batch.
type defragFixture struct {
	t    *testing.T
	path string
	b    *Backend
	want model
}

func newDefragFixture(t *testing.T) *defragFixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	b, err := Open(Config{Path: path, Buckets: [][]byte{testBucket, otherBucket}, BatchInterval: 100 * 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &defragFixture{t: t, path: path, b: b, want: model{string(testBucket): {}, string(otherBucket): {}}}
}

func (f *defragFixture) put(bucket []byte, k, v string) {
	f.t.Helper()
	tx := f.b.Batch()
	err := tx.Put(bucket, []byte(k), []byte(v))
	if uerr := tx.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		f.t.Fatal(err)
	}
	f.want[string(bucket)][k] = v
}

func (f *defragFixture) del(bucket []byte, k string) {
	f.t.Helper()
	tx := f.b.Batch()
	err := tx.Delete(bucket, []byte(k))
	if uerr := tx.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		f.t.Fatal(err)
	}
	delete(f.want[string(bucket)], k)
}

func (f *defragFixture) commit() {
	f.t.Helper()
	if err := f.b.Commit(); err != nil {
		f.t.Fatal(err)
	}
}

// read is what b holds now, through a read transaction of its own.
func read(t *testing.T, b *Backend) model {
	t.Helper()
	got := model{}
	err := b.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			m := map[string]string{}
			got[string(name)] = m
			return bk.ForEach(func(k, v []byte) error { m[string(k)] = string(v); return nil })
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (f *defragFixture) check(b *Backend, when string) {
	f.t.Helper()
	got := read(f.t, b)
	for name, want := range f.want {
		if !maps.Equal(got[name], want) {
			f.t.Fatalf("%s: bucket %s holds %d keys, want %d (or different values)", when, name, len(got[name]), len(want))
		}
	}
}

// fill writes n keys of 1 KiB and deletes every other one, so the file has free pages.
func (f *defragFixture) fill(n int) {
	value := string(make([]byte, 1024))
	for i := 0; i < n; i++ {
		f.put(testBucket, fmt.Sprintf("key-%06d", i), value)
	}
	f.commit()
	for i := 0; i < n; i += 2 {
		f.del(testBucket, fmt.Sprintf("key-%06d", i))
	}
	f.commit()
}

// TestDefragFollowsWritesMadeDuringIt: writes, overwrites and deletions made after the copy's
// state was taken (some committed, some still pending in the batch when the copy is swapped
// in), before and after the copy itself, all end up in the defragmented file, which is smaller,
// keeps its buckets' sequences, and holds the same after a reopen. Enough writes come after the
// copy that the copy catches up in a round while writes go on before the final step.
func TestDefragFollowsWritesMadeDuringIt(t *testing.T) {
	f := newDefragFixture(t)
	f.fill(4000)
	batch := f.b.Batch()
	tx, err := batch.WritableTx()
	if err == nil {
		err = tx.Bucket(otherBucket).SetSequence(41)
	}
	batch.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	f.put(otherBucket, "seq", "set")
	f.commit()
	before := f.b.Size()

	run, err := f.b.startDefrag()
	if err != nil {
		t.Fatal(err)
	}
	// Before the copy reads anything: overwrite a copied key, delete one, add new ones.
	f.put(testBucket, "key-000001", "overwritten before the copy")
	f.del(testBucket, "key-000003")
	f.put(otherBucket, "new-before-copy", "x")
	f.commit()
	f.put(otherBucket, "pending-before-copy", "y") // still pending through the copy
	if err := run.copy(); err != nil {
		t.Fatal(err)
	}
	// After the copy: more than the final step takes, so one catch-up round runs first.
	for i := 0; i < defragFinalWrites+500; i++ {
		f.put(otherBucket, fmt.Sprintf("after-%05d", i), "z")
	}
	f.commit()
	f.del(otherBucket, "new-before-copy")
	f.put(testBucket, "key-000001", "overwritten again")
	f.put(testBucket, "pending-at-swap", "w") // pending when the copy is swapped in
	if err := run.catchUpAndSwap(); err != nil {
		t.Fatal(err)
	}
	if run.res.rounds < 1 {
		t.Fatalf("%d catch-up rounds: every recorded write was replayed with writes held", run.res.rounds)
	}
	if want := 2 + 1 + 1 + defragFinalWrites + 500 + 1 + 1 + 1; run.res.replayed != want {
		t.Fatalf("%d writes replayed onto the copy, want %d", run.res.replayed, want)
	}
	f.check(f.b, "after the swap")
	if after := f.b.Size(); after >= before {
		t.Fatalf("the file is %d bytes after the defrag, %d before", after, before)
	}
	if _, err := os.Stat(f.path + defragSuffix); !os.IsNotExist(err) {
		t.Fatalf("the copy's name is still there: %v", err)
	}
	f.put(testBucket, "after-swap", "v") // the batch writes into the new file
	if err := f.b.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(Config{Path: f.path, Buckets: [][]byte{testBucket, otherBucket}})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	f.check(reopened, "after a reopen")
	reopened.View(func(tx *bolt.Tx) error {
		if seq := tx.Bucket(otherBucket).Sequence(); seq != 41 {
			t.Errorf("bucket sequence %d after the defrag, want 41", seq)
		}
		return nil
	})
}

// TestDefragGivesWayToAReplacement: a snapshot from the leader replacing the file while the
// copy is made wins: the defrag fails, its copy is removed, and the backend serves the snapshot.
func TestDefragGivesWayToAReplacement(t *testing.T) {
	f := newDefragFixture(t)
	f.fill(200)
	run, err := f.b.startDefrag()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.copy(); err != nil {
		t.Fatal(err)
	}
	snapPath := filepath.Join(t.TempDir(), "snapshot")
	snap, err := Open(Config{Path: snapPath, Buckets: [][]byte{testBucket, otherBucket}})
	if err != nil {
		t.Fatal(err)
	}
	tx := snap.Batch()
	tx.Put(otherBucket, []byte("from"), []byte("leader"))
	tx.Unlock()
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.b.ReplaceWith(snapPath); err != nil {
		t.Fatal(err)
	}
	if err := run.catchUpAndSwap(); !errors.Is(err, errReplaced) {
		t.Fatalf("the defrag ended with %v, want %v", err, errReplaced)
	}
	f.want = model{string(testBucket): {}, string(otherBucket): {"from": "leader"}}
	f.check(f.b, "after the replacement")
	if _, err := os.Stat(f.path + defragSuffix); !os.IsNotExist(err) {
		t.Fatalf("the abandoned copy is still there: %v", err)
	}
}

// TestDefragStartsAgainAfterAMigration: a write straight through bbolt (a storage migration)
// cannot be replayed onto the copy, so that copy is given up; Defrag then copies again.
func TestDefragStartsAgainAfterAMigration(t *testing.T) {
	f := newDefragFixture(t)
	f.fill(200)
	run, err := f.b.startDefrag()
	if err != nil {
		t.Fatal(err)
	}
	migrate := func() {
		batch := f.b.Batch()
		tx, err := batch.WritableTx()
		if err == nil {
			err = tx.Bucket(otherBucket).Put([]byte("storage"), []byte("3.7"))
		}
		batch.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		f.want[string(otherBucket)]["storage"] = "3.7"
		f.commit()
	}
	migrate()
	if err := run.copy(); err != nil {
		t.Fatal(err)
	}
	if err := run.catchUpAndSwap(); !errors.Is(err, errRawWrite) {
		t.Fatalf("the defrag ended with %v, want %v", err, errRawWrite)
	}
	f.check(f.b, "after the given-up copy")
	if err := f.b.Defrag(); err != nil {
		t.Fatal(err)
	}
	f.check(f.b, "after Defrag")
}

// TestSnapshotReadSpansADefrag: a snapshot being streamed when the copy is swapped in goes on
// reading the old file to its end (bbolt closes the old file only after its last reader).
func TestSnapshotReadSpansADefrag(t *testing.T) {
	f := newDefragFixture(t)
	f.fill(400)
	rc, size, err := f.b.ReadSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 4096)
	if _, err := io.ReadFull(rc, first); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Defrag(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(len(first) + len(rest)); got != size {
		t.Fatalf("the snapshot streamed %d bytes, announced %d", got, size)
	}
	copied := filepath.Join(t.TempDir(), "snap.db")
	if err := os.WriteFile(copied, append(first, rest...), 0o600); err != nil {
		t.Fatal(err)
	}
	sb, err := Open(Config{Path: copied})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	f.check(sb, "the snapshot taken before the defrag")
}

// TestCloseStopsADefrag: Close during the copy makes the copy stop, waits for it and leaves
// no copy behind; the file is as committed.
func TestCloseStopsADefrag(t *testing.T) {
	f := newDefragFixture(t)
	f.fill(200)
	run, err := f.b.startDefrag()
	if err != nil {
		t.Fatal(err)
	}
	f.put(otherBucket, "written during the copy", "v")
	f.b.batchMu.Lock()
	f.b.stopDefragLocked(errClosing) // what Close does first
	f.b.batchMu.Unlock()
	if err := run.copy(); !errors.Is(err, errStopped) {
		t.Fatalf("the copy ended with %v, want it stopped", err)
	}
	if err := f.b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.path + defragSuffix); !os.IsNotExist(err) {
		t.Fatalf("the abandoned copy is still there: %v", err)
	}
	reopened, err := Open(Config{Path: f.path})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	f.check(reopened, "after the close")
	if err := reopened.Close(); err != nil {
		t.Fatal(err)
	}
	if err := reopened.Defrag(); !errors.Is(err, errClosing) {
		t.Fatalf("Defrag after Close: %v, want %v", err, errClosing)
	}
}

// TestOpenRemovesAStaleDefragCopy: the copy a crash left before its rename is removed at Open.
func TestOpenRemovesAStaleDefragCopy(t *testing.T) {
	f := newDefragFixture(t)
	f.fill(50)
	if err := f.b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path+defragSuffix, []byte("half a copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Open(Config{Path: f.path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := os.Stat(f.path + defragSuffix); !os.IsNotExist(err) {
		t.Fatalf("the stale copy is still there: %v", err)
	}
	f.check(b, "after the reopen")
}
