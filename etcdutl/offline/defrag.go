package offline

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/dustin/go-humanize"

	"etcdx/server/schema"
)

// DefragResult gives the file size, and the size its pages in use take, before and after.
type DefragResult struct {
	Before, After           int64
	InUseBefore, InUseAfter int64
}

// defrag rewrites a stopped member's bbolt file without its free pages, logging upstream's
// "defragmenting" and "finished defragmenting directory" events to log. It refuses while a
// server holds the file: a live member is defragmented with etcdctl defrag.
func defrag(dataDir string, wait time.Duration, log *slog.Logger) (*DefragResult, error) {
	if err := checkDataDir(dataDir); err != nil {
		return nil, err
	}
	be, err := openBackend(dataDir, wait)
	if err != nil {
		return nil, err
	}
	path := schema.BackendPath(dataDir)
	res := &DefragResult{Before: be.Size(), InUseBefore: be.SizeInUse()}
	log.Info("defragmenting", "path", path, "current-db-size-bytes", res.Before, "current-db-size", humanize.Bytes(uint64(res.Before)),
		"current-db-size-in-use-bytes", res.InUseBefore, "current-db-size-in-use", humanize.Bytes(uint64(res.InUseBefore)))
	start := time.Now()
	if err := be.Defrag(); err != nil {
		be.Close()
		return nil, fmt.Errorf("defragment %s: %w", path, err)
	}
	res.After, res.InUseAfter = be.Size(), be.SizeInUse()
	log.Info("finished defragmenting directory", "path", path,
		"current-db-size-bytes-diff", res.After-res.Before, "current-db-size-bytes", res.After, "current-db-size", humanize.Bytes(uint64(res.After)),
		"current-db-size-in-use-bytes-diff", res.InUseAfter-res.InUseBefore, "current-db-size-in-use-bytes", res.InUseAfter,
		"current-db-size-in-use", humanize.Bytes(uint64(res.InUseAfter)), "took", time.Since(start))
	return res, be.Close()
}
