// Package fileutil holds the file-system steps the storage packages share.
package fileutil

import (
	"fmt"
	"os"
)

// SyncDir makes the names in dir durable: a file created in or renamed into it is only certain
// to be there after a crash once the directory itself is synced.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
