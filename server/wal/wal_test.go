package wal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func entries(from, to, term uint64) []raftpb.Entry {
	var es []raftpb.Entry
	for i := from; i <= to; i++ {
		es = append(es, raftpb.Entry{Index: i, Term: term, Data: []byte{byte(i)}})
	}
	return es
}

func reopen(t *testing.T, dir string, snap raftpb.SnapshotMetadata) (*WAL, raftpb.HardState, []raftpb.Entry) {
	t.Helper()
	w, err := Open(dir, snap)
	if err != nil {
		t.Fatal(err)
	}
	md, st, ents, err := w.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if string(md) != "meta" {
		t.Fatalf("metadata = %q", md)
	}
	return w, st, ents
}

func TestRoundTripAndConflictOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := Create(dir, []byte("meta"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 3}, entries(1, 5, 1)); err != nil {
		t.Fatal(err)
	}
	// A new leader overwrites the uncommitted tail from index 4.
	if err := w.Save(raftpb.HardState{Term: 2, Vote: 2, Commit: 4}, entries(4, 6, 2)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, st, ents := reopen(t, dir, raftpb.SnapshotMetadata{})
	defer w.Close()
	if st.Term != 2 || st.Commit != 4 {
		t.Fatalf("hard state = %+v", st)
	}
	if len(ents) != 6 || ents[3].Term != 2 || ents[5].Index != 6 || ents[2].Term != 1 {
		t.Fatalf("entries = %+v", ents)
	}
}

func TestTornTailIsCutAndCorruptionIsReported(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := Create(dir, []byte("meta"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Save(raftpb.HardState{Term: 1, Commit: 3}, entries(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	seg := filepath.Join(dir, segmentName(0, 0))
	good, _ := os.ReadFile(seg)
	// An interrupted append: half a record at the end.
	torn := append(append([]byte(nil), good...), encodeRecord(nil, recEntry, []byte("0123456789"))[:9]...)
	os.WriteFile(seg, torn, 0o600)
	w, _, ents := reopen(t, dir, raftpb.SnapshotMetadata{})
	if len(ents) != 3 {
		t.Fatalf("entries after torn tail = %d", len(ents))
	}
	if err := w.Save(raftpb.HardState{Term: 1, Commit: 4}, entries(4, 4, 1)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, _, ents = reopen(t, dir, raftpb.SnapshotMetadata{})
	w.Close()
	if len(ents) != 4 {
		t.Fatalf("entries after append past cut tail = %d", len(ents))
	}

	// A flipped byte in the middle of the file is corruption, not a tail.
	data, _ := os.ReadFile(seg)
	data[len(data)/2] ^= 0xff
	os.WriteFile(seg, data, 0o600)
	w, err = Open(dir, raftpb.SnapshotMetadata{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, _, _, err := w.ReadAll(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("want ErrCorrupt, got %v", err)
	}
	after, _ := os.ReadFile(seg)
	if string(after) != string(data) {
		t.Fatal("a corrupt WAL was modified")
	}
}

func TestCutAndReleaseKeepsStateAndSnapshot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := Create(dir, []byte("meta"))
	if err != nil {
		t.Fatal(err)
	}
	w.segLimit = 200
	for i := uint64(1); i <= 40; i++ {
		if err := w.Save(raftpb.HardState{Term: 1, Commit: i}, entries(i, i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if w.SegmentCount() < 5 {
		t.Fatalf("segments = %d, want several", w.SegmentCount())
	}
	snap := raftpb.SnapshotMetadata{Index: 30, Term: 1}
	if err := w.SaveSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	before := w.SegmentCount()
	if err := w.ReleaseTo(30); err != nil {
		t.Fatal(err)
	}
	if w.SegmentCount() >= before {
		t.Fatalf("release removed nothing (%d segments)", before)
	}
	w.Close()
	w, st, ents := reopen(t, dir, snap)
	defer w.Close()
	if st.Commit != 40 || len(ents) != 10 || ents[0].Index != 31 {
		t.Fatalf("after release: state %+v, %d entries from %d", st, len(ents), ents[0].Index)
	}
	if _, err := Open(dir, snap); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: want ErrLocked, got %v", err)
	}
}

func TestMissingSnapshotMarker(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := Create(dir, []byte("meta"))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, err = Open(dir, raftpb.SnapshotMetadata{Index: 9, Term: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, _, _, err := w.ReadAll(); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("want ErrSnapshotNotFound, got %v", err)
	}
}

func TestReleaseKeepsMaxFiles(t *testing.T) {
	cases := []struct {
		name     string
		maxFiles int // -1: not set
		want     func(before, covered int) int
	}{
		{"unset releases every covered file", -1, func(before, covered int) int { return before - covered }},
		{"0 keeps all", 0, func(before, _ int) int { return before }},
		{"3 keeps three", 3, func(before, covered int) int { return max(3, before-covered) }},
		{"a limit above the count keeps all", 1000, func(before, _ int) int { return before }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := Create(filepath.Join(t.TempDir(), "wal"), []byte("meta"))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.segLimit = 200
			if c.maxFiles >= 0 {
				w.SetMaxFiles(c.maxFiles)
			}
			for i := uint64(1); i <= 40; i++ {
				if err := w.Save(raftpb.HardState{Term: 1, Commit: i}, entries(i, i, 1)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.SaveSnapshot(raftpb.SnapshotMetadata{Index: 35, Term: 1}); err != nil {
				t.Fatal(err)
			}
			before := w.SegmentCount()
			covered := 0
			for i := 0; i+1 < len(w.segments); i++ {
				if w.segments[i+1].index <= 36 {
					covered = i + 1
				}
			}
			if err := w.ReleaseTo(35); err != nil {
				t.Fatal(err)
			}
			if got, want := w.SegmentCount(), c.want(before, covered); got != want {
				t.Fatalf("segments after release = %d, want %d (before %d, covered %d)", got, want, before, covered)
			}
			files, _ := filepath.Glob(filepath.Join(w.dir, "*.wal"))
			if len(files) != w.SegmentCount() {
				t.Fatalf("%d files on disk, %d segments", len(files), w.SegmentCount())
			}
		})
	}
}
