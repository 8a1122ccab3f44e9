package offline

import (
	"etcdx/server/backend"
	"etcdx/server/version"
	"log/slog"
	"time"
)

// Every exported operation runs under backend.Guard: a damaged file on which bbolt panics or
// faults (a page pointing past the end, a broken header) ends the operation with a "corrupt
// database" error naming the file, never a crash of the tool.

func guarded[T any](path string, op func() (T, error)) (res T, err error) {
	if gerr := backend.Guard(path, func() error { res, err = op(); return nil }); gerr != nil {
		var zero T
		return zero, gerr
	}
	return res, err
}

// Backup makes a consistent copy of a stopped member's data directory (see backupDir).
func Backup(cfg BackupConfig) (*BackupResult, error) {
	return guarded(cfg.DataDir, func() (*BackupResult, error) { return backupDir(cfg) })
}

// Check inspects a stopped member's data directory without changing it (see check).
func Check(dataDir string) (*CheckReport, error) {
	return guarded(dataDir, func() (*CheckReport, error) { return check(dataDir) })
}

// Defrag rewrites a stopped member's database without its free pages (see defrag), waiting up
// to wait for a member that is stopping to let go of it (0: for ever), logging to log.
func Defrag(dataDir string, wait time.Duration, log *slog.Logger) (*DefragResult, error) {
	return guarded(dataDir, func() (*DefragResult, error) { return defrag(dataDir, wait, log) })
}

// HashKV hashes the key-value store of a database file as a live member would (see hashKV),
// waiting as Defrag does.
func HashKV(dbFile string, rev int64, wait time.Duration) (*HashKVResult, error) {
	return guarded(dbFile, func() (*HashKVResult, error) { return hashKV(dbFile, rev, wait) })
}

// Migrate moves a stopped member's storage to target (see migrate), waiting as Defrag does.
func Migrate(dataDir string, target version.Level, force bool, wait time.Duration) (*MigrateResult, error) {
	return guarded(dataDir, func() (*MigrateResult, error) { return migrate(dataDir, target, force, wait) })
}

// GetStatus describes a snapshot or database file without changing it (see getStatus).
func GetStatus(path string) (*Status, error) {
	return guarded(path, func() (*Status, error) { return getStatus(path) })
}

// Restore writes a new data directory from a snapshot file (see restore).
func Restore(cfg RestoreConfig) error {
	_, err := guarded(cfg.SnapshotPath, func() (struct{}, error) { return struct{}{}, restore(cfg) })
	return err
}
