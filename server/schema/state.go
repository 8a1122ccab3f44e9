package schema

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/version"
)

// Writer is what the typed writers below write through: the backend's batch (so a change is
// committed with the raft entry that caused it), or a bbolt transaction offline (TxWriter).
type Writer interface {
	Put(bucket, key, value []byte) error
	Delete(bucket, key []byte) error
}

// TxWriter writes straight into a bbolt transaction (offline tools).
func TxWriter(tx *bolt.Tx) Writer { return txWriter{tx} }

type txWriter struct{ tx *bolt.Tx }

func (w txWriter) Put(bucket, key, value []byte) error {
	b, err := w.tx.CreateBucketIfNotExists(bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", bucket, err)
	}
	return b.Put(key, value)
}

func (w txWriter) Delete(bucket, key []byte) error {
	if b := w.tx.Bucket(bucket); b != nil {
		return b.Delete(key)
	}
	return nil
}

// ReadConsistentIndex returns the last applied raft index and its term (zero for a new file).
func ReadConsistentIndex(tx *bolt.Tx) (index, term uint64) {
	if m := tx.Bucket(Meta); m != nil {
		return GetUint64(m.Get(MetaConsistentIndex)), GetUint64(m.Get(MetaTerm))
	}
	return 0, 0
}

// PutConsistentIndex records the applied raft index and term.
func PutConsistentIndex(w Writer, index, term uint64) error {
	if err := w.Put(Meta, MetaConsistentIndex, PutUint64(index)); err != nil {
		return err
	}
	return w.Put(Meta, MetaTerm, PutUint64(term))
}

// ReadClusterVersion returns the replicated cluster version (zero before the first decision).
func ReadClusterVersion(tx *bolt.Tx) (version.Level, error) {
	b := tx.Bucket(Cluster)
	if b == nil {
		return version.Level{}, nil
	}
	raw := b.Get(ClusterVersion)
	if raw == nil {
		return version.Level{}, nil
	}
	l, err := version.ParseLevel(string(raw))
	if err != nil {
		return version.Level{}, fmt.Errorf("unreadable cluster version in the cluster bucket: %w", err)
	}
	return l, nil
}

// PutClusterVersion records the cluster version as upstream writes it ("3.6.0").
func PutClusterVersion(w Writer, l version.Level) error {
	return w.Put(Cluster, ClusterVersion, []byte(l.Full()))
}

// ReadDowngrade returns the replicated downgrade info (zero when none was ever enabled).
func ReadDowngrade(tx *bolt.Tx) (version.DowngradeInfo, error) {
	var dg version.DowngradeInfo
	b := tx.Bucket(Cluster)
	if b == nil {
		return dg, nil
	}
	if raw := b.Get(ClusterDowngrade); raw != nil {
		if err := json.Unmarshal(raw, &dg); err != nil {
			return dg, fmt.Errorf("unreadable downgrade info in the cluster bucket: %w", err)
		}
	}
	return dg, nil
}

// PutDowngrade records the downgrade info as upstream's JSON.
func PutDowngrade(w Writer, dg version.DowngradeInfo) error {
	raw, err := json.Marshal(dg)
	if err != nil {
		return fmt.Errorf("encode downgrade info: %w", err)
	}
	return w.Put(Cluster, ClusterDowngrade, raw)
}
