package backend

import (
	"errors"
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// ErrCorrupt means bbolt met a damaged page: its own assertions, an index out of range or a
// read outside the mapped file, all of which it reports by panicking or faulting.
var ErrCorrupt = errors.New("corrupt database")

// Guard runs fn and turns a panic or a memory fault inside it into an ErrCorrupt naming path, so
// a damaged file is an error for the caller (a request, a start-up, an offline tool), never a
// crash. Faults are caught only in the calling goroutine, which is where bbolt reads run.
func Guard(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, path, r)
		}
	}()
	return fn()
}

// SafeView is db.View under Guard.
func SafeView(db *bolt.DB, fn func(*bolt.Tx) error) error {
	return Guard(db.Path(), func() error { return db.View(fn) })
}

// SafeUpdate is db.Update under Guard.
func SafeUpdate(db *bolt.DB, fn func(*bolt.Tx) error) error {
	return Guard(db.Path(), func() error { return db.Update(fn) })
}
