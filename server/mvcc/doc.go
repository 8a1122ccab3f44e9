// Package mvcc is the multi-version key-value store: every change gets a new revision, old
// revisions stay readable until compacted, and watchers receive changes in revision order.
//
// Values live in the backend's "key" bucket keyed by revision, exactly as upstream etcd stores
// them; an in-memory index maps each key to its revisions.
//
// The files:
//
//	store.go       Store: write transactions, read views (a range looks keys up under the
//	               store's lock and fetches records from a pinned read transaction after it),
//	               compaction (the index in chunks, the backend in paced batches), HashKV
//	index.go       treeIndex: keys to their revisions, in key order
//	keyindex.go    one key's generations and revisions
//	keyentry.go    a key's entry made in one allocation with its first revision and key
//	restore.go     the index rebuilt from the backend at start-up and after a snapshot
//	watch.go       watchers: synced ones fed by writes, the others caught up from history
//	keyset.go      the keys some watchers watch, which a catch-up decodes history for
//	pagecounts.go  a paginated read's count carried from one page to the next
//	kvdecode.go    a range's stored key-values decoded into one buffer
//	compacthash.go the hashes compactions computed, which HashKV answers with
//	metrics.go     upstream's mvcc metric families
package mvcc
