// Package v2store is the v2 API's key tree as upstream 3.5 keeps it: directories and values
// addressed by path, each with the store index that created and last modified it, optional
// expiry, an event history of the last 1000 changes for watchers that ask from an index, and
// the JSON document raft snapshots carry. It is deterministic: every change is applied in raft
// order, with the times the proposing member computed, so members agree on every index.
//
// The files:
//
//	store.go  Store: create, set, update, compare-and-swap, delete, compare-and-delete, get,
//	          expiry, the snapshot document
//	node.go   a directory or a value, with the snapshot document's field names
//	event.go  events and the history of the last 1,000 changes
//	watch.go  one-shot and streaming watchers
//	stats.go  the operation counts /v2/stats/store shows
//	errors.go upstream's error codes, texts and HTTP statuses
package v2store
