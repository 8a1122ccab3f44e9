package offline

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"etcdx/server/backend"
	"etcdx/server/mvcc"
	"etcdx/server/schema"
)

// seedDB is a small member database: every bucket, a few revisions and a compaction.
func seedDB(f *testing.F) []byte { return seedDBT(f) }

func seedDBT(f testing.TB) []byte {
	path := filepath.Join(f.TempDir(), "db")
	be, err := backend.Open(backend.Config{Path: path, Buckets: schema.Buckets})
	if err != nil {
		f.Fatal(err)
	}
	st, err := mvcc.Open(be, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, k := range []string{"a", "b", "a", "c"} {
		tx := st.Write()
		tx.Put([]byte(k), []byte("value of "+k), 0)
		tx.End()
	}
	st.Compact(2)
	st.Close()
	// A snapshot holds only the pages in use (the file itself is grown in 16 MB steps), so the
	// fuzzer mutates tens of kilobytes, not megabytes.
	var buf bytes.Buffer
	rc, _, err := be.ReadSnapshot()
	if err != nil {
		f.Fatal(err)
	}
	if _, err := io.Copy(&buf, rc); err != nil {
		f.Fatal(err)
	}
	rc.Close()
	be.Close()
	return buf.Bytes()
}

// FuzzGetStatus: any bytes given to `etcdutl snapshot status` (and hashkv, which opens files the
// same way) give a status or an error, never a panic or a fault.
func FuzzGetStatus(f *testing.F) {
	seed := seedDB(f)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	path := filepath.Join(f.TempDir(), "snapshot.db") // one per fuzzing process, whose runs are sequential
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		GetStatus(path)
	})
}
