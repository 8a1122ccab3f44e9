package offline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/backend"
	"etcdx/server/schema"
)

// BackupResult says what a backup copied.
type BackupResult struct {
	DBBytes   int64
	WALFiles  int
	SnapFiles int
}

// backupDir makes a consistent copy of a stopped member's data directory in backupDir (which must
// not exist or be empty): the bbolt file written from one read transaction, the WAL segments and
// raft snapshot files, each fsynced. Stopping the member, moving its data directory away and
// moving the backup in its place rolls the member back to this point.
func backupDir(dataDir, backupDir string) (*BackupResult, error) {
	if err := checkDataDir(dataDir); err != nil {
		return nil, err
	}
	if backupDir == "" {
		return nil, fmt.Errorf("--backup-dir is required")
	}
	if des, err := os.ReadDir(backupDir); err == nil && len(des) > 0 {
		return nil, fmt.Errorf("backup directory %s is not empty", backupDir)
	}
	// The shared lock keeps a server from starting on the directory while it is copied.
	db, err := openDB(schema.BackendPath(dataDir), true, DefaultLockWait)
	if err != nil {
		return nil, err
	}
	defer db.Close()

	tmp := filepath.Clean(backupDir) + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	res := &BackupResult{}
	err = func() error {
		for _, d := range []string{schema.WALDir(tmp), schema.SnapDir(tmp)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		if err := backend.SafeView(db, func(tx *bolt.Tx) error {
			return writeFileSynced(schema.BackendPath(tmp), func(w io.Writer) error {
				n, err := tx.WriteTo(w)
				res.DBBytes = n
				return err
			})
		}); err != nil {
			return fmt.Errorf("copy the database: %w", err)
		}
		var err error
		if res.WALFiles, err = copyFiles(schema.WALDir(dataDir), schema.WALDir(tmp), ".wal"); err != nil {
			return err
		}
		if res.SnapFiles, err = copyFiles(schema.SnapDir(dataDir), schema.SnapDir(tmp), ".snap"); err != nil {
			return err
		}
		for _, d := range []string{schema.WALDir(tmp), schema.SnapDir(tmp), schema.MemberDir(tmp), tmp} {
			if err := syncDir(d); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	os.Remove(backupDir) // an empty directory may stand where the result goes
	if err := os.Rename(tmp, backupDir); err != nil {
		return nil, fmt.Errorf("move the backup into place: %w", err)
	}
	return res, syncDir(filepath.Dir(filepath.Clean(backupDir)))
}

// copyFiles copies the files in src whose names end in suffix.
func copyFiles(src, dst, suffix string) (int, error) {
	des, err := os.ReadDir(src)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", src, err)
	}
	n := 0
	for _, de := range des {
		if de.IsDir() || !strings.HasSuffix(de.Name(), suffix) {
			continue
		}
		in, err := os.Open(filepath.Join(src, de.Name()))
		if err != nil {
			return n, err
		}
		err = writeFileSynced(filepath.Join(dst, de.Name()), func(w io.Writer) error {
			_, err := io.Copy(w, in)
			return err
		})
		in.Close()
		if err != nil {
			return n, fmt.Errorf("copy %s: %w", de.Name(), err)
		}
		n++
	}
	return n, nil
}

func writeFileSynced(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
