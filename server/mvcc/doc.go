// Package mvcc is the multi-version key-value store: every change gets a new revision, old
// revisions stay readable until compacted, and watchers receive changes in revision order.
//
// Values live in the backend's "key" bucket keyed by revision, exactly as upstream etcd stores
// them; an in-memory index maps each key to its revisions.
package mvcc
