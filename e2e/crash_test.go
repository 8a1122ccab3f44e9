package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/upgradelab/cluster"
)

// writeAcked runs writers concurrently until stop closes (or n writes are acknowledged) and
// returns every acknowledged key and value.
func writeAcked(t *testing.T, c *clientv3.Client, prefix string, workers, n int, stop <-chan struct{}) map[string]string {
	return writeAckedSized(t, c, prefix, workers, n, 0, stop)
}

// writeAckedSized is writeAcked with values padded to size bytes (0: short values).
func writeAckedSized(t *testing.T, c *clientv3.Client, prefix string, workers, n, size int, stop <-chan struct{}) map[string]string {
	var mu sync.Mutex
	acked := map[string]string{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < n/workers; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k, v := fmt.Sprintf("%s/%d/%05d", prefix, w, i), fmt.Sprintf("v%d", i)
				if len(v) < size {
					v += strings.Repeat("x", size-len(v))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := c.Put(ctx, k, v)
				cancel()
				if err != nil {
					t.Logf("writer %d stopped after %d writes: %v", w, i, err)
					return // e.g. the member died under us: what was acknowledged so far counts
				}
				mu.Lock()
				acked[k] = v
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	return acked
}

func checkAcked(t *testing.T, c *clientv3.Client, prefix string, acked map[string]string) {
	t.Helper()
	res, err := cluster.CheckAcked(Ctx(t), c, prefix+"/", acked)
	if err != nil {
		t.Fatal(err)
	}
	// Each key was written once: a replay that applied an entry twice shows up here.
	for _, kv := range res.AppliedTwice {
		t.Fatalf("%s was applied more than once: version %d, created %d, modified %d", kv.Key, kv.Version, kv.CreateRevision, kv.ModRevision)
	}
	lost := res.Lost
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged writes lost after restart, e.g. %v", len(lost), len(acked), lost[:min(5, len(lost))])
	}
}

func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	stop := make(chan struct{})
	done := make(chan map[string]string)
	go func() { done <- writeAcked(t, c, "crash", 8, 100000, stop) }()
	time.Sleep(1500 * time.Millisecond)
	m.Kill() // mid-stream: some writes are in flight
	close(stop)
	acked := <-done
	if len(acked) < 100 {
		t.Fatalf("only %d writes acknowledged before the kill; the test proves nothing", len(acked))
	}
	m.Start()
	checkAcked(t, m.Client(), "crash", acked)
	t.Logf("%d acknowledged writes survived kill -9", len(acked))
}

func lastSegment(t *testing.T, m *Member) string {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(m.DataDir, "member", "wal", "*.wal"))
	if len(segs) == 0 {
		t.Fatal("no WAL segments")
	}
	sort.Strings(segs)
	return segs[len(segs)-1]
}

// walDataEnd is where the records of a preallocated WAL segment end.
func walDataEnd(b []byte) int {
	end := len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	return (end + 7) &^ 7
}

// midRecordByte is the offset of a byte in the middle of the record that spans the middle of a
// WAL segment's records.
func midRecordByte(b []byte) int {
	half := walDataEnd(b) / 2
	for off := 0; off+8 <= len(b); {
		field := binary.LittleEndian.Uint64(b[off:])
		n := int(field &^ (0xff << 56))
		pad := 0
		if field>>63 == 1 {
			pad = int(field>>56) & 7
		}
		if off+8+n > half {
			return off + 8 + n/2
		}
		off += 8 + n + pad
	}
	return half
}

func TestWALTornTailAndCorruption(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	acked := writeAcked(t, c, "wal", 4, 400, nil)
	m.Kill()

	// An interrupted append: the frame of a 2,000-byte record reached the disk and only the first
	// bytes of its data did (the segment is preallocated, so the rest are still zeros). The member
	// cuts it off, keeps a copy of the segment, says so, and starts.
	seg := lastSegment(t, m)
	data, _ := os.ReadFile(seg)
	end := walDataEnd(data)
	torn := binary.LittleEndian.AppendUint64(nil, 2000)
	torn = append(torn, 0x08, 0x02, 0x10, 0x99, 0x77, 0x1a, 0xc8, 0x0f, 0x55, 0x66) // type 2, crc, 1,992 data bytes
	f, _ := os.OpenFile(seg, os.O_WRONLY, 0)
	f.WriteAt(torn, int64(end))
	f.Close()
	m.Start()
	checkAcked(t, m.Client(), "wal", acked)
	if !m.LogHas("repaired WAL") {
		t.Fatalf("the cut was not logged\n%s", m.LogTail(20))
	}
	if _, err := os.Stat(seg + ".broken"); err != nil {
		t.Fatalf("no copy of the repaired segment: %v", err)
	}
	m.Stop()

	// A damaged record in the middle is corruption: refuse to start, say why, change nothing.
	// The byte is inside a record (a flipped padding byte harms nothing and is not checked).
	data, _ = os.ReadFile(seg)
	data[midRecordByte(data)] ^= 0xff
	os.WriteFile(seg, data, 0o600)
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	code, err := m.Wait(15 * time.Second)
	if err != nil {
		t.Fatalf("a member with a corrupt WAL kept running: %v", err)
	}
	log := m.Log()
	if code != 1 || !strings.Contains(log, "wal: corrupt") || strings.Contains(log, "panic") {
		t.Fatalf("corrupt WAL: exit %d\n%s", code, m.LogTail(5))
	}
	if after, _ := os.ReadFile(seg); string(after) != string(data) {
		t.Fatal("the member modified a corrupt WAL")
	}
}

func TestCorruptDatabaseFile(t *testing.T) {
	m := NewMember(t)
	m.Start()
	m.Client().Put(Ctx(t), "k", "v")
	m.Stop()
	db := filepath.Join(m.DataDir, "member", "snap", "db")
	data, _ := os.ReadFile(db)
	for i := 0; i < 8192 && i < len(data); i++ {
		data[i] = 0xAB // both meta pages
	}
	os.WriteFile(db, data, 0o600)
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	code, err := m.Wait(15 * time.Second)
	if err != nil {
		t.Fatalf("a member with a corrupt database kept running: %v", err)
	}
	log := m.Log()
	if code != 1 || !strings.Contains(log, "snap/db") || strings.Contains(log, "goroutine ") {
		t.Fatalf("corrupt db: exit %d\n%s", code, m.LogTail(60))
	}
}

func TestSnapshotCountCompactsLogAndRestarts(t *testing.T) {
	m := NewMember(t, "--snapshot-count", "100")
	m.Start()
	c := m.Client()
	acked := writeAcked(t, c, "snap", 4, 1000, nil)
	// Snapshots are written, and older ones purged, beside the apply loop: wait for the writer.
	waitFor(t, Ctx(t), "1..5 snapshot files after 1000 writes with --snapshot-count=100 (older ones purged)", func() bool {
		snaps, _ := filepath.Glob(filepath.Join(m.DataDir, "member", "snap", "*.snap"))
		return len(snaps) > 0 && len(snaps) <= 5
	})
	if !strings.Contains(m.Log(), "saved snapshot to disk") {
		t.Fatal("no snapshot was logged")
	}
	m.Kill()
	m.Start()
	checkAcked(t, m.Client(), "snap", acked)
	// More writes after the restart land at the next revisions.
	r, err := m.Client().Put(Ctx(t), "after", "1")
	if err != nil || r.Header.Revision != int64(len(acked))+2 {
		t.Fatalf("put after restart: %+v %v (want revision %d)", r, err, len(acked)+2)
	}
}

func TestGracefulShutdown(t *testing.T) {
	m := NewMember(t)
	m.Start()
	m.Client().Put(Ctx(t), "k", "v")
	start := time.Now()
	if err := m.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, m.LogTail(10))
	}
	if err := m.ExitErr(); !endedBy(err, syscall.SIGTERM) {
		t.Fatalf("after SIGTERM the process ended with %v; want by the signal, after clean-up, as upstream", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	if !strings.Contains(m.Log(), "closed etcd server") {
		t.Fatal("no shutdown log line")
	}
}

func TestSIGTERMUnderLoad(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	stop := make(chan struct{})
	done := make(chan map[string]string)
	go func() { done <- writeAcked(t, c, "term", 8, 100000, stop) }()
	time.Sleep(time.Second)
	if err := m.Stop(); err != nil {
		t.Fatalf("SIGTERM under load: %v\n%s", err, m.LogTail(10))
	}
	if err := m.ExitErr(); !endedBy(err, syscall.SIGTERM) {
		t.Fatalf("after SIGTERM under load the process ended with %v", err)
	}
	close(stop)
	acked := <-done
	if len(acked) < 100 {
		t.Fatalf("only %d writes acknowledged before SIGTERM", len(acked))
	}
	m.Start()
	checkAcked(t, m.Client(), "term", acked)
}

// --max-snapshots keeps that many raft snapshot files; 0 keeps them all, as upstream.
func TestMaxSnapshots(t *testing.T) {
	for _, c := range []struct {
		max      string
		min, top int
	}{{"2", 1, 2}, {"0", 6, 100}} {
		m := NewMember(t, "--snapshot-count", "100", "--max-snapshots", c.max)
		m.Start()
		writeAcked(t, m.Client(), "snap", 4, 1000, nil)
		// Snapshots are written, and older ones purged, beside the apply loop: wait for the writer.
		waitFor(t, Ctx(t), fmt.Sprintf("%d..%d snapshot files after 1000 writes with --snapshot-count=100 and --max-snapshots=%s", c.min, c.top, c.max), func() bool {
			snaps, _ := filepath.Glob(filepath.Join(m.DataDir, "member", "snap", "*.snap"))
			return len(snaps) >= c.min && len(snaps) <= c.top
		})
		m.Kill()
	}
	m := NewMember(t, "--max-snapshots", "-1")
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	if code, err := m.Wait(10 * time.Second); code == 0 || err != nil || !m.LogHas("--max-snapshots must not be negative") {
		t.Fatalf("negative --max-snapshots: exit %d, %v\n%s", code, err, m.LogTail(5))
	}
}

// --bootstrap-defrag-threshold-megabytes defragments the database at start when at least that
// much of it is free, and says it skips otherwise, as upstream.
func TestBootstrapDefrag(t *testing.T) {
	m := NewMember(t)
	m.Start()
	c := m.Client()
	big := strings.Repeat("x", 100<<10)
	var rev int64
	// 30 MB of values, then all deleted and compacted away. bbolt grows a file in steps of 16 MiB
	// once its memory map is larger (both implementations map 10 GiB from the start), so a
	// defragmented file is at least that: the free space must be well above it to show.
	for i := 0; i < 300; i++ {
		r, err := c.Put(Ctx(t), fmt.Sprintf("big/%03d", i), big)
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	d, err := c.Delete(Ctx(t), "big/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(Ctx(t), max(rev, d.Header.Revision), clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(m.DataDir, "member", "snap", "db")
	size := func() int64 {
		st, err := os.Stat(db)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	restart := func(threshold string) {
		t.Helper()
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
		m.Extra = []string{"--bootstrap-defrag-threshold-megabytes", threshold}
		m.Start()
	}
	restart("1000")
	if !m.LogHas("Skipping defragmentation") {
		t.Fatalf("a threshold above the free space did not skip\n%s", m.LogTail(20))
	}
	before := size()
	restart("1")
	if !m.LogHas("finished defragmenting directory") || size() >= before/2 {
		t.Fatalf("a 1 MB threshold with ~30 MB free: db %d -> %d bytes\n%s", before, size(), m.LogTail(20))
	}
	if r, err := m.Client().Get(Ctx(t), "big/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || r.Count != 0 {
		t.Fatalf("after the defrag: %+v %v", r, err)
	}
}
