package backend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

var testBucket = []byte("test")

// TestFailedCommitStopsWrites: when a commit fails (here every write to the file gets ENOSPC,
// as on a full disk), the backend says so on Failed, refuses later writes with the cause instead
// of panicking in a dead transaction, never commits again, and the file keeps exactly what was
// committed before.
func TestFailedCommitStopsWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	var file *os.File
	b, err := Open(Config{Path: path, Buckets: [][]byte{testBucket}, BatchInterval: 100 * 3600e9,
		openFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, mode)
			file = f
			return f, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	put := func(k string) error {
		tx := b.Batch()
		err := tx.Put(testBucket, []byte(k), []byte("v"))
		if uerr := tx.Unlock(); err == nil {
			err = uerr
		}
		return err
	}
	if err := put("committed"); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if err := unix.Dup2(int(full.Fd()), int(file.Fd())); err != nil {
		t.Fatal(err)
	}
	if err := put("lost"); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err == nil {
		t.Fatal("commit to a full disk succeeded")
	}
	select {
	case <-b.Failed():
	default:
		t.Fatal("Failed not closed after a failed commit")
	}
	if b.Err() == nil {
		t.Fatal("Err is nil after a failed commit")
	}
	if err := put("after"); err == nil {
		t.Fatal("a put after a failed commit was taken")
	}
	tx := b.Batch()
	btx, err := tx.Tx()
	if err != nil {
		t.Fatalf("read view after failure: %v", err)
	}
	if v := btx.Bucket(testBucket).Get([]byte("committed")); string(v) != "v" {
		t.Fatalf("committed key reads %q through the batch after failure", v)
	}
	if err := tx.Delete(testBucket, []byte("committed")); err == nil {
		t.Fatal("a delete after a failed commit was taken")
	}
	tx.Unlock()
	if err := b.Defrag(); err == nil {
		t.Fatal("defrag after a failed commit succeeded")
	}
	if err := b.Close(); err == nil {
		t.Fatal("close hid the failed commit")
	}

	db, err := OpenFile(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("file after failure: %v", err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(testBucket)
		if string(bk.Get([]byte("committed"))) != "v" {
			t.Error("a committed key is gone")
		}
		for _, k := range []string{"lost", "after"} {
			if bk.Get([]byte(k)) != nil {
				t.Errorf("%q reached the file after a failed commit", k)
			}
		}
		return nil
	})
}

// TestDefragAndReplaceWith: both swap the file under the backend; writes go on after each.
func TestDefragAndReplaceWith(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(Config{Path: filepath.Join(dir, "db"), Buckets: [][]byte{testBucket}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	put := func(k string) {
		t.Helper()
		tx := b.Batch()
		err := tx.Put(testBucket, []byte(k), []byte("v"))
		if uerr := tx.Unlock(); err == nil {
			err = uerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	get := func(k string) string {
		var v []byte
		b.View(func(tx *bolt.Tx) error { v = tx.Bucket(testBucket).Get([]byte(k)); return nil })
		return string(v)
	}
	put("a")
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	put("b")
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if get("a") != "v" || get("b") != "v" {
		t.Fatal("data lost across defrag")
	}

	other := filepath.Join(dir, "incoming")
	ob, err := Open(Config{Path: other, Buckets: [][]byte{[]byte("elsewhere")}})
	if err != nil {
		t.Fatal(err)
	}
	tx := ob.Batch()
	tx.Put([]byte("elsewhere"), []byte("x"), []byte("y"))
	tx.Unlock()
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.ReplaceWith(other); err != nil {
		t.Fatal(err)
	}
	if get("a") != "" {
		t.Fatal("the replaced file's data is still there")
	}
	put("c") // the configured buckets exist in the new file
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if get("c") != "v" {
		t.Fatal("write after replace lost")
	}
}

// TestVerifyFile: a real file passes; a branch page pointing back at itself (on which bbolt's
// cursors loop for ever) and a page pointing past the file are refused.
func TestVerifyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	b, err := Open(Config{Path: path, Buckets: [][]byte{testBucket, []byte("small")}})
	if err != nil {
		t.Fatal(err)
	}
	tx := b.Batch()
	for i := 0; i < 3000; i++ {
		tx.Put(testBucket, []byte(fmt.Sprintf("key-%05d", i)), make([]byte, 100))
	}
	tx.Put([]byte("small"), []byte("inline"), []byte("bucket"))
	tx.Unlock()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := VerifyFile(path); err != nil {
		t.Fatalf("a healthy file: %v", err)
	}
	db, err := OpenFile(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root uint64
	db.View(func(tx *bolt.Tx) error { root = uint64(tx.Bucket(testBucket).Root()); return nil })
	ps := int64(db.Info().PageSize)
	db.Close()
	data, _ := os.ReadFile(path)
	page := data[int64(root)*ps:]
	if page[8] != branchPageFlag {
		t.Fatalf("the bucket's root page %d is not a branch page (flags %#x)", root, page[8])
	}
	// change gets the root page; its first element follows the header.
	damageFile := func(name string, change func(file []byte), want string) {
		b := append([]byte(nil), data...)
		change(b)
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, b, 0o600)
		err := VerifyFile(p)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want %q", name, err, want)
		}
	}
	damage := func(name string, change func(page []byte), want string) {
		damageFile(name, func(b []byte) { change(b[int64(root)*ps:]) }, want)
	}
	first := pageHeaderSize
	damage("cycle", func(p []byte) { binary.LittleEndian.PutUint64(p[first+8:], root) }, "referenced more than once")
	damage("past the end", func(p []byte) { binary.LittleEndian.PutUint64(p[first+8:], 1<<40) }, "outside the pages in use")
	damage("key past the page", func(p []byte) { binary.LittleEndian.PutUint32(p[first:], 1<<30) }, "runs past the page")
	// bbolt's cursor follows an empty branch page's first element all the same (found by
	// FuzzGetStatus: the cursor's stack grew until memory ran out).
	damage("empty branch page", func(p []byte) { binary.LittleEndian.PutUint16(p[10:], 0) }, "neither a leaf page nor a branch page with elements")
	damage("unknown page type", func(p []byte) { binary.LittleEndian.PutUint16(p[8:], 0x20) }, "neither a leaf page nor a branch page with elements")
	// Keys out of order, which bbolt checks, by panicking in a goroutine of its own, when it
	// rebuilds the free list of a file that has none: a branch key equal to the one before it,
	// and a leaf's first key below the key its parent files it under.
	keyOf := func(p []byte, i int) []byte {
		at := pageHeaderSize + i*elementSize
		pos, ksize := int(binary.LittleEndian.Uint32(p[at:])), int(binary.LittleEndian.Uint32(p[at+4:]))
		return p[at+pos : at+pos+ksize]
	}
	damage("branch keys out of order", func(p []byte) { copy(keyOf(p, 1), keyOf(p, 0)) }, "is not after key 0")
	child := int64(binary.LittleEndian.Uint64(page[first+elementSize+8:])) // the second child
	damageFile("leaf key below its parent's", func(b []byte) { copy(keyOf(b[child*ps:], 0), "key-00000") }, "before its parent's key")
}

// Read shares one read transaction between readers and renews it at every commit: each read
// sees everything committed before it began, readers running across commits, a defrag and a
// replacement never block them or each other, and Close does not wait on a reader's transaction.
func TestSharedReadFollowsCommits(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(Config{Path: filepath.Join(dir, "db"), Buckets: [][]byte{testBucket}, BatchInterval: 100 * 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	readCounter := func() (uint64, error) {
		var n uint64
		err := b.Read(func(tx *bolt.Tx) error {
			if v := tx.Bucket(testBucket).Get([]byte("n")); v != nil {
				n = binary.BigEndian.Uint64(v)
			}
			return nil
		})
		return n, err
	}
	var committed atomic.Uint64
	stop := make(chan struct{})
	errs := make(chan error, 8)
	for r := 0; r < 8; r++ {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				floor := committed.Load()
				n, err := readCounter()
				if err == nil && n < floor {
					err = fmt.Errorf("read %d after %d was committed", n, floor)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := uint64(1); i <= 300; i++ {
		tx := b.Batch()
		if err := tx.Put(testBucket, []byte("n"), binary.BigEndian.AppendUint64(nil, i)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		committed.Store(i)
		switch i {
		case 100:
			if err := b.Defrag(); err != nil {
				t.Fatal(err)
			}
		case 200:
			// Replace the file with a copy of itself, as a snapshot from the leader would.
			snap := filepath.Join(dir, "snap")
			f, err := os.Create(snap)
			if err != nil {
				t.Fatal(err)
			}
			rc, _, err := b.ReadSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, rc); err != nil {
				t.Fatal(err)
			}
			rc.Close()
			f.Close()
			if err := b.ReplaceWith(snap); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	for r := 0; r < 8; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n, err := readCounter(); err != nil || n != 300 {
		t.Fatalf("last read %d, %v", n, err)
	}
	closed := make(chan error)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: a read transaction was left open")
	}
}

// TestSizeFollowsFile: Size is recorded, not read per call, so each way to a new database state
// (a commit, a defrag, a replaced file) must record it again; otherwise the quota check and the
// db size gauge would go on reporting a file that no longer exists.
func TestSizeFollowsFile(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(Config{Path: filepath.Join(dir, "db"), Buckets: [][]byte{testBucket}, BatchInterval: 100 * 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fileSize := func() int64 {
		t.Helper()
		var n int64
		if err := b.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	check := func(when string) int64 {
		t.Helper()
		if got, want := b.Size(), fileSize(); got != want {
			t.Fatalf("%s: Size() = %d, the committed file holds %d", when, got, want)
		}
		return b.Size()
	}
	write := func(n int, del bool) {
		t.Helper()
		tx := b.Batch()
		value := make([]byte, 4096)
		for i := 0; i < n; i++ {
			k := []byte(fmt.Sprintf("k%05d", i))
			var err error
			if del {
				err = tx.Delete(testBucket, k)
			} else {
				err = tx.Put(testBucket, k, value)
			}
			if err != nil {
				tx.Unlock()
				t.Fatal(err)
			}
		}
		if err := tx.Unlock(); err != nil {
			t.Fatal(err)
		}
	}

	empty := check("after open")
	write(1000, false)
	if b.Size() != empty {
		t.Fatalf("Size() moved to %d before the commit (was %d)", b.Size(), empty)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	full := check("after a commit of 4 MB")
	if full < empty+4_000_000 {
		t.Fatalf("Size() after writing 4 MB is %d (empty %d)", full, empty)
	}

	write(990, true)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	check("after deletes") // bbolt keeps the freed pages: the file does not shrink yet
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	defragged := check("after defrag")
	if defragged >= full/2 {
		t.Fatalf("Size() after defrag is %d, before %d: not the rewritten file", defragged, full)
	}

	other := filepath.Join(dir, "incoming")
	ob, err := Open(Config{Path: other, Buckets: [][]byte{testBucket}})
	if err != nil {
		t.Fatal(err)
	}
	otx := ob.Batch()
	big := make([]byte, 1<<20)
	for i := 0; i < 8; i++ {
		if err := otx.Put(testBucket, []byte(fmt.Sprintf("big%d", i)), big); err != nil {
			t.Fatal(err)
		}
	}
	if err := otx.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.ReplaceWith(other); err != nil {
		t.Fatal(err)
	}
	if replaced := check("after ReplaceWith"); replaced < 8<<20 {
		t.Fatalf("Size() after replacing with an 8 MB file is %d", replaced)
	}
}

// TestSeqPutPacksPages: records written in key order with SeqPut take fewer pages than with Put
// (bbolt splits a full page in half unless told that no key will land in it again).
func TestSeqPutPacksPages(t *testing.T) {
	inUse := func(seq bool) int64 {
		b, err := Open(Config{Path: filepath.Join(t.TempDir(), "db"), Buckets: [][]byte{testBucket}, BatchInterval: 100 * 3600e9})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		value := make([]byte, 200)
		for i := 0; i < 20000; i++ {
			tx := b.Batch()
			key := binary.BigEndian.AppendUint64(nil, uint64(i))
			put := tx.Put
			if seq {
				put = tx.SeqPut
			}
			err := put(testBucket, key, value)
			if uerr := tx.Unlock(); err == nil {
				err = uerr
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		return b.SizeInUse()
	}
	put, seq := inUse(false), inUse(true)
	t.Logf("in use after 20000 ordered records: Put %d bytes, SeqPut %d", put, seq)
	if float64(seq) > 0.7*float64(put) {
		t.Fatalf("SeqPut left %d bytes in use against Put's %d: pages not packed", seq, put)
	}
}
