// Package schema is the on-disk layout of a member, in one place: the data directory's paths,
// every bbolt bucket and key with the encoding of its value, and the storage-version steps that
// move a file between adjacent levels. The layout is upstream etcd's, so data files interchange.
//
// backend runs the bbolt file; this package says what is in it. Readers take a *bolt.Tx (a view
// or the batch's transaction); writers take the backend's batch so a change lands in the same
// commit as the raft entry that caused it.
package schema
