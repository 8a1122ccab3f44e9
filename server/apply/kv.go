package apply

import (
	"errors"

	"etcdx/server/lease"
	"etcdx/server/mvcc"
)

// Reader is what a request reads through: a read view, or a write transaction (which sees its
// own changes). mvcc.TxnRead and mvcc.TxnWrite are both.
type Reader interface {
	Range(key, end []byte, ro mvcc.RangeOptions) (*mvcc.RangeResult, error)
	// KeyRevisions is a key's create and mod revisions and version from the index alone.
	KeyRevisions(key []byte) (create, mod, version int64, ok bool)
	// Rev is the revision reads see; CompactRev the compaction point below which they fail.
	Rev() int64
	CompactRev() int64
}

// Writer is a write transaction: every change it makes shares one revision.
type Writer interface {
	Reader
	Put(key, value []byte, lease int64) error
	DeleteRange(key, end []byte) (int64, error)
	// Changes is how many changes it made so far.
	Changes() int
}

// Leases says which leases exist (a put may only attach a key to one of them).
type Leases interface {
	Exists(id int64) bool
}

var (
	// ErrKeyNotFound refuses a put with ignore_value or ignore_lease on a missing key.
	ErrKeyNotFound = errors.New("etcdserver: key not found")
	// ErrLeaseNotFound refuses a put on a lease that does not exist.
	ErrLeaseNotFound = lease.ErrNotFound
	// ErrHalfApplied marks a transaction that failed after it had begun to write: the caller
	// must throw away its batch rather than commit part of a transaction.
	ErrHalfApplied = errors.New("etcdserver: transaction failed after it had begun to write")
)

// GteRange turns the API's "\x00" range end (all keys >= key) into the store's empty end, and
// an absent one into nil (the key alone).
func GteRange(end []byte) []byte {
	if len(end) == 1 && end[0] == 0 {
		return []byte{}
	}
	if len(end) == 0 {
		return nil
	}
	return end
}
