package schema

// Storage versions: what each level's bbolt file contains, and the steps between adjacent levels.
// Every step is a short list of idempotent actions applied inside the caller's transaction, so a
// crash leaves the old schema or the new one, never a mix.

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"etcdx/server/version"
)

// action is one change to the file.
type action struct {
	what   string
	bucket []byte
	key    []byte
	value  []byte // nil: delete the key
}

func (a action) apply(tx *bolt.Tx) error {
	b := tx.Bucket(a.bucket)
	if b == nil {
		var err error
		if b, err = tx.CreateBucketIfNotExists(a.bucket); err != nil {
			return fmt.Errorf("%s: %w", a.what, err)
		}
	}
	var err error
	if a.value == nil {
		err = b.Delete(a.key)
	} else {
		err = b.Put(a.key, a.value)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", a.what, err)
	}
	return nil
}

// step holds the actions that take a file from the level below `to` up to `to`, and back down.
type step struct {
	up, down []action
}

// steps is keyed by the upper level of each pair. 3.5 is the baseline: the layout upstream 3.5
// writes, with no storage version key (its absence means 3.5).
var steps = map[version.Level]step{
	version.V3_6: {
		up:   []action{{what: "set meta/storageVersion to 3.6.0", bucket: Meta, key: MetaStorageVersion, value: []byte("3.6.0")}},
		down: []action{{what: "delete meta/storageVersion (3.5 has none)", bucket: Meta, key: MetaStorageVersion}},
	},
	version.V3_7: {
		up:   []action{{what: "set meta/storageVersion to 3.7.0", bucket: Meta, key: MetaStorageVersion, value: []byte("3.7.0")}},
		down: []action{{what: "set meta/storageVersion to 3.6.0", bucket: Meta, key: MetaStorageVersion, value: []byte("3.6.0")}},
	},
}

// Read returns the storage version of the file: 3.5 when the key is absent, as upstream.
func Read(tx *bolt.Tx) (version.Level, error) {
	b := tx.Bucket(Meta)
	if b == nil {
		return version.V3_5, nil
	}
	raw := b.Get(MetaStorageVersion)
	if raw == nil {
		return version.V3_5, nil
	}
	l, err := version.ParseLevel(string(raw))
	if err != nil {
		return version.Level{}, fmt.Errorf("unreadable storage version %q in meta/storageVersion: %w", raw, err)
	}
	return l, nil
}

// plan lists, in order, the actions that migrate from one level to another. Both levels must be
// known to this binary; the walk goes one level at a time.
func plan(from, to version.Level) ([]action, error) {
	for _, l := range []version.Level{from, to} {
		if !version.IsKnown(l) {
			return nil, fmt.Errorf("storage version %s is not one this binary knows (%s to %s)", l, version.Known()[0], version.Known()[len(version.Known())-1])
		}
	}
	var acts []action
	for cur := from; cur != to; {
		if cur.Less(to) {
			next := cur.Next()
			acts = append(acts, steps[next].up...)
			cur = next
		} else {
			acts = append(acts, steps[cur].down...)
			cur = cur.Prev()
		}
	}
	return acts, nil
}

// Migrate moves the file in tx from its current storage version to `to` and returns what it did.
func Migrate(tx *bolt.Tx, to version.Level) (version.Level, []string, error) {
	from, err := Read(tx)
	if err != nil {
		return version.Level{}, nil, err
	}
	acts, err := plan(from, to)
	if err != nil {
		return from, nil, err
	}
	done := make([]string, 0, len(acts))
	for _, a := range acts {
		if err := a.apply(tx); err != nil {
			return from, done, fmt.Errorf("migrate storage from %s to %s: %w", from, to, err)
		}
		done = append(done, a.what)
	}
	return from, done, nil
}

// ForceStorageVersion writes to as the file's storage version whatever it held, as upstream's
// `etcdutl migrate --force` does when no migration plan leads there: the key is deleted below
// 3.6 (3.5 has none), else set to "X.Y.0". It returns what it did.
func ForceStorageVersion(tx *bolt.Tx, to version.Level) (string, error) {
	b, err := tx.CreateBucketIfNotExists(Meta)
	if err != nil {
		return "", err
	}
	if to.Less(version.V3_6) {
		return "delete meta/storageVersion", b.Delete(MetaStorageVersion)
	}
	v := fmt.Sprintf("%d.%d.0", to.Major, to.Minor)
	return "set meta/storageVersion to " + v, b.Put(MetaStorageVersion, []byte(v))
}
