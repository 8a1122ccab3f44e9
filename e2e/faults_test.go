package e2e

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// mountTmpfs mounts a tmpfs of size (mount's syntax, "80m") on dir for the test: a disk that
// really fills up. It needs root, which CI has.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		cannotRun(t, "mounting a tmpfs to fill needs root")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs on %s: %v\n%s", dir, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
}

// fatalLines are the lines a member logged at upstream's fatal level.
func fatalLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, `{"level":"fatal"`) {
			out = append(out, l)
		}
	}
	return out
}

// TestDiskFullStopsMemberWithoutLoss: one member of three runs on a small tmpfs and fills it
// under writes. Whichever file meets the full disk first (WAL segment, snapshot or database),
// the member stops with one fatal line in upstream's words and exit status 1: no panic, no
// half-applied batch. The cluster keeps taking writes; once space is freed the member restarts,
// catches up and holds every acknowledged write, with the same hash as its peers.
func TestDiskFullStopsMemberWithoutLoss(t *testing.T) {
	c := NewCluster(t, 3)
	small := c.Members[2]
	mnt := filepath.Join(t.TempDir(), "small-disk")
	os.MkdirAll(mnt, 0o755)
	mountTmpfs(t, mnt, "80m") // the first 64 MB WAL segment fits, little else
	small.DataDir = filepath.Join(mnt, "data")
	small.LogPath = filepath.Join(t.TempDir(), "m3.log")
	c.Start()
	cli := c.Members[0].Client()

	stop := make(chan struct{})
	done := make(chan map[string]string)
	go func() { done <- writeAckedSized(t, cli, "full", 4, 20000, 16<<10, stop) }()
	code, err := small.Wait(90 * time.Second)
	close(stop)
	acked := <-done
	if err != nil {
		t.Fatalf("the member on the full disk kept running: %v\n%s", err, small.LogTail(20))
	}
	log := small.Log()
	fatal := fatalLines(log)
	if code != 1 || len(fatal) != 1 || strings.Contains(log, "panic") || strings.Contains(log, "goroutine ") {
		t.Fatalf("full disk: exit %d, %d fatal lines\n%s", code, len(fatal), small.LogTail(30))
	}
	if !regexp.MustCompile(`"msg":"(failed to commit tx|failed to save Raft hard state and entries|failed to save Raft snapshot)".*no space left on device`).MatchString(fatal[0]) {
		t.Fatalf("fatal line does not say the disk is full in upstream's words: %s", fatal[0])
	}
	t.Logf("%d writes acknowledged; the member stopped with: %s", len(acked), fatal[0])

	// The cluster goes on without it. The full member may have led: a proposal forwarded to it
	// as it died is lost with it (as upstream's), so the write goes once the two left have a leader.
	c.Leader(15 * time.Second)
	if _, err := cli.Put(Ctx(t), "full/after", "v"); err != nil {
		t.Fatalf("the remaining members stopped taking writes: %v", err)
	}
	acked["full/after"] = "v"

	if out, err := exec.Command("mount", "-o", "remount,size=1g", mnt).CombinedOutput(); err != nil {
		t.Fatalf("grow the tmpfs: %v\n%s", err, out)
	}
	small.Start()
	checkAcked(t, small.Client(), "full", acked)
	requireSameHashKV(t, c)
}

// TestWALCutShortIsRefused: a member whose WAL lost its second half while the database kept
// everything is refused at start with the indexes and the repair, instead of the silent hang of
// upstream's member; nothing in the data dir is changed.
func TestWALCutShortIsRefused(t *testing.T) {
	m := NewMember(t, "--snapshot-count", "100000")
	m.Start()
	acked := writeAcked(t, m.Client(), "cut", 4, 2000, nil)
	if len(acked) != 2000 {
		t.Fatalf("%d of 2000 writes acknowledged", len(acked))
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	seg := lastSegment(t, m)
	data, _ := os.ReadFile(seg)
	cut := recordStartNear(data, walDataEnd(data)/2)
	for i := cut; i < len(data); i++ {
		data[i] = 0
	}
	os.WriteFile(seg, data, 0o600)
	db := filepath.Join(m.DataDir, "member", "snap", "db")
	dbBefore, _ := os.ReadFile(db)

	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	code, err := m.Wait(20 * time.Second)
	if err != nil {
		t.Fatalf("a member whose WAL is behind its database kept running: %v\n%s", err, m.LogTail(10))
	}
	log := m.Log()
	want := regexp.MustCompile(`backend.ConsistentIndex \(\d+\) must be <= the WAL's last index \(\d+\): the database has applied the log up to index \d+ but the WAL in \S+ ends at index \d+ \(commit index \d+\).*etcdctl member remove [0-9a-f]+.*etcdutl snapshot restore`)
	if code != 1 || !want.MatchString(log) || strings.Contains(log, "panic") {
		t.Fatalf("cut WAL: exit %d\n%s", code, m.LogTail(10))
	}
	if after, _ := os.ReadFile(db); string(after) != string(dbBefore) {
		t.Fatal("the refused member changed its database")
	}
}

// recordStartNear is the offset of the WAL record that holds byte off of a segment.
func recordStartNear(b []byte, off int) int {
	for pos := 0; pos+8 <= len(b); {
		field := binary.LittleEndian.Uint64(b[pos:])
		n := int(field &^ (0xff << 56))
		pad := 0
		if field>>63 == 1 {
			pad = int(field>>56) & 7
		}
		if n == 0 || pos+8+n+pad > off {
			return pos
		}
		pos += 8 + n + pad
	}
	return off
}

// crashed says whether a tool's output shows a crash instead of an error.
func crashed(out string) bool {
	return strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") || strings.Contains(out, "fatal error")
}

// damagedCopies writes variants of the file at src into dir: every 4 KiB page zeroed in turn,
// pages filled with a pattern, bytes flipped at seeded places, and cuts at several lengths. bbolt
// panics or faults on many of these when nobody guards it.
func damagedCopies(t *testing.T, src, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	write := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	const page = 4096
	for off := 0; off+page <= len(data); off += page {
		b := append([]byte(nil), data...)
		clear(b[off : off+page])
		write(fmt.Sprintf("zero-page-%d", off/page), b)
		for i := off + 16; i < off+page; i++ { // keep the header, scramble the rest
			b[i] = byte(i * 7)
		}
		write(fmt.Sprintf("pattern-page-%d", off/page), b)
		b = append([]byte(nil), data...)
		for i := off; i < off+16; i++ { // the page header: id, flags, count, overflow
			b[i] ^= 0xff
		}
		write(fmt.Sprintf("header-page-%d", off/page), b)
	}
	seed := uint32(1)
	for v := 0; v < 40; v++ {
		b := append([]byte(nil), data...)
		for n := 0; n < 8; n++ {
			seed = seed*1664525 + 1013904223
			b[int(seed)%len(b)] ^= byte(seed >> 24)
		}
		write(fmt.Sprintf("flips-%d", v), b)
	}
	for _, n := range []int{0, 100, page, 2*page + 10, len(data) / 2, len(data) - 1} {
		write(fmt.Sprintf("cut-%d", n), data[:n])
	}
	return out
}

// TestDamagedSnapshotFilesNeverCrashEtcdutl: snapshot status and restore on damaged snapshot
// files answer with an error (exit 1) or a result, never a panic or a runtime fault.
func TestDamagedSnapshotFilesNeverCrashEtcdutl(t *testing.T) {
	m := NewMember(t)
	m.Start()
	fillKeyspace(t, m.Client())
	snap := saveSnapshot(t, m.Client())
	m.Kill()
	dir := t.TempDir()
	refused := 0
	files := damagedCopies(t, snap, dir)
	for i, f := range files {
		code, out := etcdutl(t, "snapshot", "status", f)
		if crashed(out) || (code != 0 && code != 1) {
			t.Fatalf("snapshot status %s: exit %d\n%s", filepath.Base(f), code, out)
		}
		if code == 1 {
			refused++
		}
		if i%4 == 0 { // restore reads the file the same way; every fourth keeps the test short
			code, out = etcdutl(t, "snapshot", "restore", f, "--skip-hash-check", "--data-dir", filepath.Join(dir, fmt.Sprint("restored-", i)))
			if crashed(out) || (code != 0 && code != 1) {
				t.Fatalf("snapshot restore %s: exit %d\n%s", filepath.Base(f), code, out)
			}
		}
	}
	if refused == 0 {
		t.Fatal("no damaged file was refused; the damage did not reach the reader")
	}
	t.Logf("%d damaged files: %d refused with an error, the rest readable", len(files), refused)
}

// TestEtcdutlCheck: `etcdutl check` passes a healthy data dir and names what is wrong in a
// damaged one (a cut WAL, a damaged snapshot file, a damaged WAL record, a damaged database
// page), with exit status 1 and without changing any file.
func TestEtcdutlCheck(t *testing.T) {
	m := NewMember(t, "--snapshot-count", "300")
	m.Start()
	acked := writeAcked(t, m.Client(), "chk", 4, 1000, nil)
	if len(acked) != 1000 {
		t.Fatalf("%d of 1000 writes acknowledged", len(acked))
	}
	// Deletions, by request and by a lease's revocation: their records hold the key alone.
	cl := m.Client()
	if _, err := cl.Put(Ctx(t), "deleted", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Delete(Ctx(t), "deleted"); err != nil {
		t.Fatal(err)
	}
	l, gerr := cl.Grant(Ctx(t), 60)
	if gerr != nil {
		t.Fatal(gerr)
	}
	if _, err := cl.Put(Ctx(t), "leased", "v", clientv3.WithLease(l.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Revoke(Ctx(t), l.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	code, out := etcdutl(t, "check", "--data-dir", m.DataDir)
	if code != 0 || !strings.Contains(out, "no problems found") {
		t.Fatalf("healthy data dir: exit %d\n%s", code, out)
	}

	variant := func(name string, damage func(dataDir string)) string {
		dir := filepath.Join(t.TempDir(), name)
		if out, err := exec.Command("cp", "-a", m.DataDir, dir).CombinedOutput(); err != nil {
			t.Fatalf("copy data dir: %v\n%s", err, out)
		}
		damage(dir)
		before := treeDigest(t, dir)
		code, out := etcdutl(t, "check", "--data-dir", dir)
		if code != 1 || crashed(out) || !strings.Contains(out, "problem: ") {
			t.Fatalf("%s: exit %d\n%s", name, code, out)
		}
		if treeDigest(t, dir) != before {
			t.Fatalf("%s: etcdutl check changed the data dir", name)
		}
		return out
	}
	out = variant("cut-wal", func(d string) {
		segs, _ := filepath.Glob(filepath.Join(d, "member", "wal", "*.wal"))
		seg := segs[len(segs)-1]
		data, _ := os.ReadFile(seg)
		clear(data[recordStartNear(data, walDataEnd(data)/2):])
		os.WriteFile(seg, data, 0o600)
	})
	if !strings.Contains(out, "backend.ConsistentIndex (") {
		t.Fatalf("cut WAL not named:\n%s", out)
	}
	out = variant("damaged-snap", func(d string) {
		snaps, _ := filepath.Glob(filepath.Join(d, "member", "snap", "*.snap"))
		if len(snaps) == 0 {
			t.Fatal("no snapshot files with --snapshot-count 300")
		}
		data, _ := os.ReadFile(snaps[len(snaps)-1])
		data[len(data)/2] ^= 0xff
		os.WriteFile(snaps[len(snaps)-1], data, 0o600)
	})
	if !regexp.MustCompile(`problem: snap: [0-9a-f-]+\.snap: `).MatchString(out) {
		t.Fatalf("damaged snapshot file not named:\n%s", out)
	}
	out = variant("damaged-wal-record", func(d string) {
		segs, _ := filepath.Glob(filepath.Join(d, "member", "wal", "*.wal"))
		data, _ := os.ReadFile(segs[0])
		data[midRecordByte(data)] ^= 0xff
		os.WriteFile(segs[0], data, 0o600)
	})
	if !strings.Contains(out, "problem: wal: ") {
		t.Fatalf("damaged WAL record not named:\n%s", out)
	}
	var damagedDB string
	out = variant("damaged-db-page", func(d string) {
		damagedDB = d
		db := filepath.Join(d, "member", "snap", "db")
		// The root page of the key bucket's tree: every read of a key passes through it.
		bdb, err := bolt.Open(db, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var root int
		bdb.View(func(tx *bolt.Tx) error { root = int(tx.Bucket([]byte("key")).Root()); return nil })
		bdb.Close()
		data, _ := os.ReadFile(db)
		p := root * 4096
		for i := p + 16; i < p+4096; i++ {
			data[i] = byte(i * 13)
		}
		os.WriteFile(db, data, 0o600)
	})
	if !strings.Contains(out, "problem: db") {
		t.Fatalf("damaged database page not named:\n%s", out)
	}
	t.Logf("a damaged database page:\n%s", out)

	// The member itself refuses the damaged page the same way, instead of crashing on it.
	m.DataDir = damagedDB
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	code, err := m.Wait(20 * time.Second)
	if err != nil {
		t.Fatalf("a member on a damaged database kept running: %v", err)
	}
	if log := m.Log(); code != 1 || !strings.Contains(log, "corrupt database: ") || strings.Contains(log, "goroutine ") {
		t.Fatalf("member on a damaged database page: exit %d\n%s", code, m.LogTail(5))
	}
}

// treeDigest is every file's name, size and contents under dir, as one string to compare.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %d %x\n", p, fi.Size(), sha256.Sum256(data))
		return nil
	})
	return b.String()
}

// TestKill9LoopAndFrozenLeader: under a steady stream of writes to a three-member cluster,
// every member in turn (the leader first) is killed with SIGKILL and restarted, then the leader
// is frozen with SIGSTOP for longer than an election and thawed. No acknowledged write is lost
// and the members end with the same hash.
func TestKill9LoopAndFrozenLeader(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	cli := c.Client()
	stop := make(chan struct{})
	done := make(chan map[string]string)
	go func() { done <- writeThrough(cli, "loop", 4, stop).acked }()

	victims := []*Member{c.Leader(10 * time.Second)}
	for _, m := range c.Members {
		if m != victims[0] {
			victims = append(victims, m)
		}
	}
	for round := 0; round < 2; round++ {
		for _, m := range victims {
			time.Sleep(500 * time.Millisecond) // writes land between the kills
			m.Kill()
			m.Start()
		}
	}
	leader := c.Leader(10 * time.Second)
	leader.Signal(syscall.SIGSTOP)
	time.Sleep(3 * time.Second) // three election timeouts: the others elect a new leader
	if now := c.Leader(10 * time.Second); now == leader {
		t.Fatal("the frozen leader is still the leader")
	}
	leader.Signal(syscall.SIGCONT)
	if err := leader.WaitHealthy(20 * time.Second); err != nil {
		t.Fatalf("the thawed leader did not rejoin: %v\n%s", err, leader.LogTail(20))
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	acked := <-done
	if len(acked) < 100 {
		t.Fatalf("only %d writes acknowledged; the test proves nothing", len(acked))
	}
	checkAcked(t, cli, "loop", acked)
	requireSameHashKV(t, c)
	t.Logf("%d acknowledged writes survived %d kills and a frozen leader", len(acked), 2*len(victims))
}

// TestPageCycleRefusedByInitialCorruptCheck: a database page that points back at its parent
// makes bbolt's first read loop for ever, so a member on it would hang at start with nothing in
// its log. With the InitialCorruptCheck gate the member walks the page tree first and
// exits 1 naming the damage.
func TestPageCycleRefusedByInitialCorruptCheck(t *testing.T) {
	m := NewMember(t)
	m.Start()
	if acked := writeAckedSized(t, m.Client(), "cycle", 4, 300, 200, nil); len(acked) != 300 {
		t.Fatalf("%d of 300 writes acknowledged", len(acked))
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(m.DataDir, "member", "snap", "db")
	bdb, err := bolt.Open(db, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root uint64
	bdb.View(func(tx *bolt.Tx) error { root = uint64(tx.Bucket([]byte("key")).Root()); return nil })
	bdb.Close()
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	// A branch page: header (id 8, flags 2, count 2, overflow 4), then 16-byte elements (pos 4,
	// key size 4, child page id 8). The first child now names the page itself.
	p := int(root) * os.Getpagesize()
	if flags := binary.LittleEndian.Uint16(data[p+8:]); flags&0x01 == 0 {
		t.Fatalf("the key bucket's root page %d is not a branch page (flags %#x); write more keys", root, flags)
	}
	binary.LittleEndian.PutUint64(data[p+16+8:], root)
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	m.Extra = append(m.Extra, "--feature-gates=InitialCorruptCheck=true")
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	code, err := m.Wait(20 * time.Second)
	if err != nil {
		t.Fatalf("a member on a database with a page cycle kept running: %v\n%s", err, m.LogTail(10))
	}
	if log := m.LogTail(5); code != 1 || !strings.Contains(log, "corrupt database: ") || !strings.Contains(log, "initial corruption check") {
		t.Fatalf("exit %d; want 1 with the damage named:\n%s", code, log)
	}
	t.Logf("refused: %s", m.LogTail(1))
}

// TestBrokenSnapFileSetAside: a member at 3.6 whose newest .snap file is damaged starts from the
// next older one and renames the damaged file to .broken, with upstream's log lines; upstream
// 3.6.16 on the same script does the same. No write is lost. (Upstream 3.7 restarts from the
// snapshot the WAL records without reading the .snap file, so it leaves a damaged one in place.)
func TestBrokenSnapFileSetAside(t *testing.T) {
	for _, impl := range []struct{ name, bin string }{{"ours", ServerAt(t, LastReleaseLevel)}, {"upstream", UpstreamBinaryAt(t, Upstream36Version, "etcd")}} {
		t.Run(impl.name, func(t *testing.T) {
			m := NewMember(t, "--snapshot-count", "100")
			m.Bin = impl.bin
			m.Start()
			acked := writeAcked(t, m.Client(), "snapfile", 1, 350, nil)
			if len(acked) != 350 {
				t.Fatalf("%d of 350 writes acknowledged", len(acked))
			}
			if err := m.Stop(); err != nil {
				t.Fatal(err)
			}
			snaps, _ := filepath.Glob(filepath.Join(m.DataDir, "member", "snap", "*.snap"))
			if len(snaps) < 2 {
				t.Fatalf("%d snap files; want at least 2", len(snaps))
			}
			newest := snaps[len(snaps)-1] // names sort by term and index
			data, err := os.ReadFile(newest)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(data) / 2; i < len(data)/2+8; i++ {
				data[i] ^= 0xff
			}
			if err := os.WriteFile(newest, data, 0o600); err != nil {
				t.Fatal(err)
			}
			m.Start()
			checkAcked(t, m.Client(), "snapfile", acked)
			if _, err := os.Stat(newest + ".broken"); err != nil {
				t.Fatalf("the damaged snap file was not set aside: %v", err)
			}
			if _, err := os.Stat(newest); !os.IsNotExist(err) {
				t.Fatalf("the damaged snap file is still in place: %v", err)
			}
			for _, msg := range []string{`"msg":"failed to read a snap file"`, `"msg":"renamed to a broken snap file"`} {
				if !m.LogHas(msg) {
					t.Fatalf("no %s line in the log:\n%s", msg, m.LogTail(30))
				}
			}
		})
	}
}
