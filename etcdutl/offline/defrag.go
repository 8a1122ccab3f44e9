package offline

import (
	"fmt"
	"time"

	"etcdx/server/schema"
)

// DefragResult gives the file size before and after.
type DefragResult struct {
	Before, After int64
}

// defrag rewrites a stopped member's bbolt file without its free pages. It refuses while a
// server holds the file: a live member is defragmented with etcdctl defrag.
func defrag(dataDir string, wait time.Duration) (*DefragResult, error) {
	if err := checkDataDir(dataDir); err != nil {
		return nil, err
	}
	be, err := openBackend(dataDir, wait)
	if err != nil {
		return nil, err
	}
	res := &DefragResult{Before: be.Size()}
	if err := be.Defrag(); err != nil {
		be.Close()
		return nil, fmt.Errorf("defragment %s: %w", schema.BackendPath(dataDir), err)
	}
	res.After = be.Size()
	return res, be.Close()
}
