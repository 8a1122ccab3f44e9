package offline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/backend"
	"etcdx/server/fileutil"
	"etcdx/server/schema"
	"etcdx/server/wal"
)

// BackupResult says what a backup copied.
type BackupResult struct {
	DBBytes   int64
	WALFiles  int
	SnapFiles int
}

// BackupConfig names what a backup copies and where to: a member's data directory and, when it
// keeps its WAL elsewhere (--wal-dir), that WAL directory; the backup's directory and, when given,
// a separate directory for the backup's WAL.
type BackupConfig struct {
	DataDir, WALDir, BackupDir, BackupWALDir string
	// V2Only (upstream 3.5's --with-v3=false) leaves the v3 data out: the copied database keeps
	// the membership and records everything the WAL committed as applied, so a member started on
	// the backup has the v2 store (snapshot and WAL) and an empty v3 key space.
	V2Only bool
}

// backupDir makes a consistent copy of a stopped member's data directory in cfg.BackupDir (which
// must not exist or be empty): the bbolt file written from one read transaction, the WAL segments
// and raft snapshot files, each fsynced. Stopping the member, moving its data directory away and
// moving the backup in its place rolls the member back to this point.
func backupDir(cfg BackupConfig) (*BackupResult, error) {
	dataDir, backupDir := cfg.DataDir, cfg.BackupDir
	if err := checkDataDir(dataDir); err != nil {
		return nil, err
	}
	if backupDir == "" {
		return nil, fmt.Errorf("--backup-dir is required")
	}
	for _, d := range []string{backupDir, cfg.BackupWALDir} {
		if des, err := os.ReadDir(d); d != "" && err == nil && len(des) > 0 {
			return nil, fmt.Errorf("backup directory %s is not empty", d)
		}
	}
	walSrc := cfg.WALDir
	if walSrc == "" {
		walSrc = schema.WALDir(dataDir)
	}
	// The shared lock keeps a server from starting on the directory while it is copied. A
	// v2-only backup may be taken of a running member, as upstream's: only the membership is
	// kept from its database, read from a verified copy of the file.
	db, err := openDB(schema.BackendPath(dataDir), true, DefaultLockWait)
	live := cfg.V2Only && errors.Is(err, ErrInUse)
	if err != nil && !live {
		return nil, err
	}
	if !live {
		defer db.Close()
	}

	// Both land under a .partial name and are renamed into place once complete.
	tmp := filepath.Clean(backupDir) + ".partial"
	walTmp := schema.WALDir(tmp)
	if cfg.BackupWALDir != "" {
		walTmp = filepath.Clean(cfg.BackupWALDir) + ".partial"
	}
	for _, d := range []string{tmp, walTmp} {
		if err := os.RemoveAll(d); err != nil {
			return nil, err
		}
	}
	res := &BackupResult{}
	err = func() error {
		for _, d := range []string{walTmp, schema.SnapDir(tmp)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		if live {
			if res.DBBytes, err = copyLiveDB(schema.BackendPath(dataDir), schema.BackendPath(tmp)); err != nil {
				return err
			}
		} else if err := backend.SafeView(db, func(tx *bolt.Tx) error {
			return writeFileSynced(schema.BackendPath(tmp), func(w io.Writer) error {
				n, err := tx.WriteTo(w)
				res.DBBytes = n
				return err
			})
		}); err != nil {
			return fmt.Errorf("copy the database: %w", err)
		}
		if cfg.V2Only {
			if err := dropV3Data(schema.BackendPath(tmp), walSrc); err != nil {
				return fmt.Errorf("leave the v3 data out: %w", err)
			}
		}
		var err error
		if res.WALFiles, err = copyFiles(walSrc, walTmp, ".wal"); err != nil {
			return err
		}
		if res.SnapFiles, err = copyFiles(schema.SnapDir(dataDir), schema.SnapDir(tmp), ".snap"); err != nil {
			return err
		}
		for _, d := range []string{walTmp, schema.SnapDir(tmp), schema.MemberDir(tmp), tmp} {
			if err := fileutil.SyncDir(d); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		os.RemoveAll(tmp)
		os.RemoveAll(walTmp)
		return nil, err
	}
	if cfg.BackupWALDir != "" {
		if err := rename(walTmp, cfg.BackupWALDir); err != nil {
			return nil, err
		}
	}
	return res, rename(tmp, backupDir)
}

// rename moves a finished .partial directory to where it goes (an empty directory may stand
// there) and makes the move durable.
func rename(from, to string) error {
	os.Remove(to)
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("move the backup into place: %w", err)
	}
	return fileutil.SyncDir(filepath.Dir(filepath.Clean(to)))
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

// v3DataBuckets hold the v3 API's data, which a v2-only backup leaves out.
var v3DataBuckets = [][]byte{schema.Key, schema.Lease, schema.Alarm, schema.Auth, schema.AuthUsers, schema.AuthRoles}

// dropV3Data empties the v3 data of the database copy at dbPath and records the WAL's commit
// index as applied, as upstream 3.5's v2-only backup does: the v3 requests the WAL holds up to it
// are not applied again, the v2 ones are (the v2 store is rebuilt from the snapshot and the WAL).
func dropV3Data(dbPath, walDir string) error {
	in, err := wal.Inspect(walDir)
	if err != nil {
		return err
	}
	commit, term := in.State.Commit, in.State.Term
	ents, err := wal.Entries(walDir)
	if err != nil {
		return fmt.Errorf("failed to read WAL: %w", err)
	}
	for _, e := range ents {
		if e.Index == commit {
			term = e.Term
		}
	}
	db, err := bolt.Open(dbPath, 0o600, &bolt.Options{Timeout: DefaultLockWait})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		for _, b := range v3DataBuckets {
			if tx.Bucket(b) == nil {
				continue
			}
			if err := tx.DeleteBucket(b); err != nil {
				return fmt.Errorf("bucket %s: %w", b, err)
			}
		}
		for _, b := range [][]byte{schema.Key, schema.Lease} {
			if _, err := tx.CreateBucket(b); err != nil {
				return fmt.Errorf("bucket %s: %w", b, err)
			}
		}
		if m := tx.Bucket(schema.Meta); m != nil {
			for _, k := range [][]byte{schema.MetaScheduledCompact, schema.MetaFinishedCompact} {
				if err := m.Delete(k); err != nil {
					return err
				}
			}
		}
		return schema.PutConsistentIndex(schema.TxWriter(tx), commit, term)
	})
}

// copyLiveDB copies the database file of a running member: bbolt writes new pages beside the
// ones its current meta page refers to, so a copy is usually consistent, and one that is not
// fails verification and is taken again.
func copyLiveDB(src, dst string) (int64, error) {
	var last error
	for range 5 {
		var n int64
		err := writeFileSynced(dst, func(w io.Writer) error {
			in, err := os.Open(src)
			if err != nil {
				return err
			}
			defer in.Close()
			n, err = io.Copy(w, in)
			return err
		})
		if err == nil {
			if err = backend.VerifyFile(dst); err == nil {
				return n, nil
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("copy the database of the running member: %w (stop it and try again)", last)
}
