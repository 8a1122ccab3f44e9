// Package schema is the on-disk layout of a member, in one place: the data directory's paths,
// every bbolt bucket and key with the encoding of its value, and the storage-version steps that
// move a file between adjacent levels. The layout is upstream etcd's, so data files interchange.
//
// backend runs the bbolt file; this package says what is in it. Readers take a *bolt.Tx (a view
// or the batch's transaction); writers take the backend's batch so a change lands in the same
// commit as the raft entry that caused it.
//
// The files:
//
//	buckets.go        the buckets, as upstream names them
//	layout.go         the data directory as upstream lays it out (member, wal, snap, db)
//	state.go          the typed readers and writers of the meta and cluster buckets
//	                  (consistent index, term, cluster version, downgrade, storage version)
//	auth.go           the auth buckets' keys and records
//	encoding.go       how meta values and revision keys are encoded
//	storageversion.go what each level's file contains, and the steps between adjacent levels
package schema
