package e2e

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func dbPath(m *Member) string { return filepath.Join(m.DataDir, "member", "snap", "db") }

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func putN(t *testing.T, c *clientv3.Client, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := c.Put(Ctx(t), fmt.Sprintf("%s/%04d", prefix, i), strings.Repeat("v", 100)); err != nil {
			t.Fatal(err)
		}
	}
}

func countPrefix(t *testing.T, m *Member, prefix string) int64 {
	t.Helper()
	r, err := m.Client().Get(Ctx(t), prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return r.Count
}

func TestEtcdutlMigrateDownAndUp(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	eachHop(t, etcdutlMigrateDownAndUp)
}

// downStep is what migrating down to each level does to meta/storageVersion.
var downStep = map[string]string{OldestLevel: "delete meta/storageVersion", LastReleaseLevel: "set meta/storageVersion to 3.6.0"}

func etcdutlMigrateDownAndUp(t *testing.T, h hop) {
	c := clusterAt(t, 1, h.to)
	m := c.Members[0]
	putN(t, m.Client(), "mig", 50)

	// While the member runs, its data is off limits.
	if code, out := etcdutl(t, "migrate", "--timeout", "1s", "--data-dir", m.DataDir, "--target-version", h.from); code != 1 || !strings.Contains(out, "in use by a running etcd") {
		t.Fatalf("migrate under a running member: %d %s", code, out)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"migrate", "--data-dir", m.DataDir}, 1, `required flag(s) "target-version" not set`},
		{[]string{"migrate", "--data-dir", m.DataDir, "--target-version", "three"}, 128, `wrong target version format, expected "X.Y", got "three"`},
		{[]string{"migrate", "--data-dir", m.DataDir, "--target-version", "3.9"}, 1, "not a version this etcdutl knows"},
		{[]string{"migrate", "--data-dir", t.TempDir(), "--target-version", "3.5"}, 1, "not an etcd data directory"},
		{[]string{"migrate", "--data-dir", m.DataDir, "--target-version", "3.5", "--bogus"}, 1, "unknown flag: --bogus"},
	} {
		if code, out := etcdutl(t, bad.args...); code != bad.code || !strings.Contains(out, bad.msg) {
			t.Errorf("etcdutl %v: %d %s; want %d and %q", bad.args, code, out, bad.code, bad.msg)
		}
	}

	// A copy whose database has not applied the WAL's cluster version change (as after a crash)
	// is refused unless --force.
	crashed := filepath.Join(t.TempDir(), "crashed")
	if code, out := etcdutl(t, "backup", "--data-dir", m.DataDir, "--backup-dir", crashed); code != 0 {
		t.Fatalf("backup: %d %s", code, out)
	}
	setConsistentIndex(t, filepath.Join(crashed, "member", "snap", "db"), 1)
	code, out := etcdutl(t, "migrate", "--data-dir", crashed, "--target-version", h.from)
	if code != 1 || !strings.Contains(out, "sets the cluster version to "+h.to) || !strings.Contains(out, "--force") {
		t.Fatalf("migrate with unapplied newer entries: %d %s", code, out)
	}
	if code, out := etcdutl(t, "migrate", "--data-dir", crashed, "--target-version", h.from, "--force"); code != 0 || !strings.Contains(out, "forced past") {
		t.Fatalf("migrate --force: %d %s", code, out)
	}

	// Down a level: the older binary serves the same data.
	code, out = etcdutl(t, "migrate", "--data-dir", m.DataDir, "--target-version", h.from)
	// Upstream's log events on standard error, with ours (each action, the cluster version).
	if code != 0 || !strings.Contains(out, `updated storage version	{"new-storage-version": "`+h.from+`.0"}`) || !strings.Contains(out, downStep[h.from]) ||
		!strings.Contains(out, `lowered the cluster version recorded in the data	{"from": "`+h.to+`", "to": "`+h.from+`"}`) {
		t.Fatalf("migrate down: %d %s", code, out)
	}
	if code, out := etcdutl(t, "migrate", "--data-dir", m.DataDir, "--target-version", h.from); code != 0 || !strings.Contains(out, `storage version up-to-date	{"storage-version": "`+h.from+`"}`) {
		t.Fatalf("migrate again: %d %s", code, out)
	}
	m.Bin = ServerAt(t, h.from)
	m.Start()
	c.WaitVersions(h.from+".0", storageOf(h.from), 10*time.Second)
	if n := countPrefix(t, m, "mig"); n != 50 {
		t.Fatalf("%s binary after migrate down sees %d keys, want 50", h.from, n)
	}
	putN(t, m.Client(), "migold", 10)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}

	// And up again: the newer binary starts on it and the cluster version follows.
	if code, out := etcdutl(t, "migrate", "--data-dir", m.DataDir, "--target-version", h.to); code != 0 || !strings.Contains(out, `updated storage version	{"new-storage-version": "`+h.to+`.0"}`) {
		t.Fatalf("migrate up: %d %s", code, out)
	}
	m.Bin = ServerAt(t, h.to)
	m.Start()
	c.WaitVersions(h.to+".0", h.to+".0", 10*time.Second)
	if countPrefix(t, m, "mig") != 50 || countPrefix(t, m, "migold") != 10 {
		t.Fatal("keys missing after migrating up")
	}
}

// setConsistentIndex rewrites meta/consistent_index in a stopped member's file.
func setConsistentIndex(t *testing.T, path string, idx uint64) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		v := make([]byte, 8)
		for i := 0; i < 8; i++ {
			v[7-i] = byte(idx >> (8 * i))
		}
		return tx.Bucket([]byte("meta")).Put([]byte("consistent_index"), v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEtcdutlHashkvDefragBackup(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	m := NewMember(t)
	m.Start()
	cl := m.Client()
	putN(t, cl, "frag", 400)
	// 25 MB more under frag/, deleted with it: bbolt grows a file in 16 MiB steps once its memory
	// map is larger (10 GiB from the start, in both implementations), so a defragmented file is
	// at least that, and the free space must be well above it to show.
	for i := 0; i < 250; i++ {
		if _, err := cl.Put(Ctx(t), fmt.Sprintf("frag/big/%03d", i), strings.Repeat("b", 100<<10)); err != nil {
			t.Fatal(err)
		}
	}
	mid, err := cl.HashKV(Ctx(t), m.ClientURL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Delete(Ctx(t), "frag/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	putN(t, cl, "keep", 20)
	st, _ := cl.Status(Ctx(t), m.ClientURL)
	if _, err := cl.Compact(Ctx(t), st.Header.Revision-1, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	live, err := cl.HashKV(Ctx(t), m.ClientURL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if code, out := etcdutl(t, "defrag", "--data-dir", m.DataDir, "--timeout", "1s"); code != 1 || !strings.Contains(out, "in use by a running etcd") {
		t.Fatalf("defrag under a running member: %d %s", code, out)
	}
	if code, out := etcdutl(t, "--timeout=1s", "hashkv", dbPath(m)); code != 1 || !strings.Contains(out, "in use by a running etcd") {
		t.Fatalf("hashkv under a running member: %d %s", code, out)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}

	// hashkv matches the live member's answer and leaves the file as it was.
	before := fileSum(t, dbPath(m))
	code, out := etcdutl(t, "hashkv", dbPath(m), "-w", "json")
	want := fmt.Sprintf(`{"hash":%d,"hashRevision":%d,"compactRevision":%d}`, live.Hash, live.Header.Revision, live.CompactRevision)
	if code != 0 || strings.TrimSpace(out) != want {
		t.Fatalf("hashkv: %d %s; live member answered %s", code, out, want)
	}
	if code, out := etcdutl(t, "hashkv", dbPath(m), "--rev", fmt.Sprint(mid.Header.Revision)); code != 1 || !strings.Contains(out, "compacted") {
		t.Fatalf("hashkv at a compacted revision: %d %s", code, out)
	}
	if code, out := etcdutl(t, "hashkv", dbPath(m), "-w", "table"); code != 0 || !strings.Contains(out, "HASH REVISION") || !strings.Contains(out, fmt.Sprint(live.Hash)) {
		t.Fatalf("hashkv table: %d %s", code, out)
	}
	if fileSum(t, dbPath(m)) != before {
		t.Fatal("hashkv changed its input")
	}
	junk := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(junk, []byte(strings.Repeat("not a db ", 1000)), 0o600)
	if code, out := etcdutl(t, "hashkv", junk); code != 1 || !strings.Contains(out, "junk") {
		t.Fatalf("hashkv of junk: %d %s", code, out)
	}

	// defrag shrinks the fragmented file.
	fi, _ := os.Stat(dbPath(m))
	if code, out := etcdutl(t, "defrag", "--data-dir", m.DataDir); code != 0 || !strings.Contains(out, "finished defragmenting directory") {
		t.Fatalf("defrag: %d %s", code, out)
	}
	fi2, _ := os.Stat(dbPath(m))
	if fi2.Size() >= fi.Size() {
		t.Fatalf("defrag did not shrink the file: %d -> %d bytes", fi.Size(), fi2.Size())
	}

	// backup, then roll back to it after more writes.
	// Nothing on standard output, as upstream 3.5's; what it copied is a log line on standard error.
	bk := filepath.Join(t.TempDir(), "backup")
	if code, stderr, stdout := runCLI(t, Binary(t, "etcdutl"), "backup", "--data-dir", m.DataDir, "--backup-dir", bk); code != 0 || stdout != "" || !strings.Contains(stderr, "backed up the data directory") {
		t.Fatalf("backup: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if code, out := etcdutl(t, "backup", "--data-dir", m.DataDir, "--backup-dir", bk); code != 1 || !strings.Contains(out, "not empty") {
		t.Fatalf("backup over an existing backup: %d %s", code, out)
	}
	m.Start()
	putN(t, m.Client(), "after", 5)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(m.DataDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bk, m.DataDir); err != nil {
		t.Fatal(err)
	}
	m.Start()
	if countPrefix(t, m, "keep") != 20 || countPrefix(t, m, "after") != 0 {
		t.Fatal("rolled-back member does not hold exactly the backed-up keys")
	}
}

func TestEtcdutlRestoreBumpRevision(t *testing.T) {
	m := NewMember(t)
	m.Start()
	putN(t, m.Client(), "bump", 10)
	snap := saveSnapshot(t, m.Client())
	st, _ := m.Client().Status(Ctx(t), m.ClientURL)
	old := st.Header.Revision

	code, out := etcdutl(t, "snapshot", "status", snap, "-w", "table")
	if code != 0 || !strings.Contains(out, "VERSION") || !strings.Contains(out, CurrentLevel+".0") {
		t.Fatalf("status: %d %s", code, out)
	}
	if code, out := etcdutl(t, "snapshot", "restore", snap, "--data-dir", t.TempDir()+"/x", "--bump-revision", "1000"); code != 128 || !strings.Contains(out, "--mark-compacted") {
		t.Fatalf("bump without mark-compacted: %d %s", code, out)
	}
	n := NewMember(t)
	code, out = etcdutl(t, "snapshot", "restore", snap, "--data-dir", n.DataDir, "--name", n.Name,
		"--initial-cluster", n.Name+"="+n.PeerURL, "--initial-advertise-peer-urls", n.PeerURL,
		"--bump-revision", "1000", "--mark-compacted")
	if code != 0 {
		t.Fatalf("restore: %d %s", code, out)
	}
	n.Start()
	r, err := n.Client().Get(Ctx(t), "bump/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 10 || r.Header.Revision < old+1000 {
		t.Fatalf("restored member: %v, %v; want 10 keys at revision >= %d", r, err, old+1000)
	}
	if _, err := n.Client().Get(Ctx(t), "bump/0001", clientv3.WithRev(old)); err != rpctypes.ErrCompacted {
		t.Fatalf("read at a pre-bump revision: %v, want compacted", err)
	}
	if _, err := n.Client().Put(Ctx(t), "bump/new", "v"); err != nil {
		t.Fatal(err)
	}
}

// restoreAndServe restores snap into a fresh single member running bin and returns it, started.
func restoreAndServe(t *testing.T, snap, bin string, migrateTo string) *Member {
	t.Helper()
	n := NewMember(t)
	n.Bin = bin
	code, out := etcdutl(t, "snapshot", "restore", snap, "--data-dir", n.DataDir, "--name", n.Name,
		"--initial-cluster", n.Name+"="+n.PeerURL, "--initial-advertise-peer-urls", n.PeerURL)
	if code != 0 {
		t.Fatalf("restore: %d %s", code, out)
	}
	if migrateTo != "" {
		if code, out := etcdutl(t, "migrate", "--data-dir", n.DataDir, "--target-version", migrateTo); code != 0 {
			t.Fatalf("migrate: %d %s", code, out)
		}
	}
	n.Start()
	return n
}

func TestSnapshotRestoredAcrossLevels(t *testing.T) { eachHop(t, snapshotRestoredAcrossLevels) }

func snapshotRestoredAcrossLevels(t *testing.T, h hop) {
	// An older snapshot served by the newer level: the cluster version then rises.
	old := clusterAt(t, 1, h.from).Members[0]
	putN(t, old.Client(), "lvl", 25)
	snapOld := saveSnapshot(t, old.Client())
	if code, out := etcdutl(t, "snapshot", "status", snapOld); code != 0 || !strings.Contains(out, h.from+".0") {
		t.Fatalf("status of a %s snapshot: %d %s", h.from, code, out)
	}
	up := restoreAndServe(t, snapOld, ServerAt(t, h.to), "")
	(&Cluster{t: t, Members: []*Member{up}}).WaitVersions(h.to+".0", h.to+".0", 10*time.Second)
	if countPrefix(t, up, "lvl") != 25 {
		t.Fatalf("%s snapshot served by %s lost keys", h.from, h.to)
	}

	// A newer snapshot served by the older level: refused until it is migrated.
	snapNew := saveSnapshot(t, up.Client())
	n := NewMember(t)
	n.Bin = ServerAt(t, h.from)
	if code, out := etcdutl(t, "snapshot", "restore", snapNew, "--data-dir", n.DataDir, "--name", n.Name,
		"--initial-cluster", n.Name+"="+n.PeerURL, "--initial-advertise-peer-urls", n.PeerURL); code != 0 {
		t.Fatalf("restore: %d %s", code, out)
	}
	startRefused(t, n, "has storage version "+h.to+", newer than this etcd "+ReleaseOf(h.from))
	down := restoreAndServe(t, snapNew, ServerAt(t, h.from), h.from)
	(&Cluster{t: t, Members: []*Member{down}}).WaitVersions(h.from+".0", storageOf(h.from), 10*time.Second)
	if countPrefix(t, down, "lvl") != 25 {
		t.Fatalf("%s snapshot served by %s lost keys", h.to, h.from)
	}
}

func TestEtcdutlCorruptDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, "member", "snap"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "member", "snap", "db"), []byte(strings.Repeat("garbage!", 4096)), 0o600)
	for _, args := range [][]string{
		{"migrate", "--data-dir", dir, "--target-version", "3.5"},
		{"defrag", "--data-dir", dir},
		{"backup", "--data-dir", dir, "--backup-dir", filepath.Join(t.TempDir(), "b")},
	} {
		code, out := etcdutl(t, args...)
		if code != 1 || !strings.Contains(out, "not a valid database") && !strings.Contains(out, "invalid database") {
			t.Errorf("etcdutl %v on a corrupt file: %d %s", args, code, out)
		}
		if strings.Contains(out, "panic") || strings.Contains(out, "goroutine") {
			t.Errorf("etcdutl %v panicked: %s", args, out)
		}
	}
}

// etcdutl backup with upstream 3.5's flags for a member that keeps its WAL apart (--wal-dir) and
// a backup that keeps its WAL apart (--backup-wal-dir): the member started on the backup holds
// exactly the backed-up keys. --with-v3=false (3.5's v2-only backup) is refused from 3.6, saying why.
func TestEtcdutlBackupWithWALDirs(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	dir := t.TempDir()
	wal := filepath.Join(dir, "wal")
	m := NewMember(t, "--wal-dir", wal)
	m.Start()
	putN(t, m.Client(), "keep", 12)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	bk, bkWAL := filepath.Join(dir, "backup"), filepath.Join(dir, "backup-wal")
	if code, out := etcdutl(t, "backup", "--data-dir", m.DataDir, "--backup-dir", bk, "--with-v3=false"); code != 128 || !strings.Contains(out, "--with-v3=false") {
		t.Fatalf("backup --with-v3=false: exit %d %s", code, out)
	}
	if code, out := etcdutl(t, "backup", "--data-dir", m.DataDir, "--wal-dir", wal, "--backup-dir", bk, "--backup-wal-dir", bkWAL); code != 0 || !strings.Contains(out, "backed up the data directory") {
		t.Fatalf("backup: exit %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(bk, "member", "wal")); err == nil {
		t.Error("the backup's WAL went into --backup-dir, not --backup-wal-dir")
	}
	m.Start()
	putN(t, m.Client(), "after", 5)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.DataDir, m.Extra = bk, []string{"--wal-dir", bkWAL}
	m.Start()
	if countPrefix(t, m, "keep") != 12 || countPrefix(t, m, "after") != 0 {
		t.Fatal("the member started on the backup does not hold exactly the backed-up keys")
	}
}
