package mvcc

import (
	"errors"

	"etcdx/server/schema"
)

var errKeyNotFound = errors.New("mvcc: key not found in index")

// generation is one life of a key: from creation to deletion (the tombstone is its last
// revision). The last generation of a live key has no tombstone; an empty last generation
// means the key is currently deleted.
type generation struct {
	ver     int64
	created schema.Revision
	revs    []schema.Revision
}

// keyIndex holds every revision of one key that has not been compacted away.
type keyIndex struct {
	key         []byte
	modified    schema.Revision
	generations []generation
}

func (ki *keyIndex) put(rev schema.Revision) {
	if len(ki.generations) == 0 {
		ki.generations = append(ki.generations, generation{})
	}
	g := &ki.generations[len(ki.generations)-1]
	if len(g.revs) == 0 {
		g.created = rev
	}
	g.revs = append(g.revs, rev)
	g.ver++
	ki.modified = rev
}

// restore starts or continues a generation from a stored value whose created revision and
// version are known (earlier revisions may have been compacted).
func (ki *keyIndex) restore(rev, created schema.Revision, ver int64) {
	if len(ki.generations) == 0 || len(ki.generations[len(ki.generations)-1].revs) == 0 {
		if len(ki.generations) == 0 {
			ki.generations = append(ki.generations, generation{})
		}
		g := &ki.generations[len(ki.generations)-1]
		g.created, g.ver, g.revs = created, ver, []schema.Revision{rev}
		ki.modified = rev
		return
	}
	ki.put(rev)
}

func (ki *keyIndex) tombstone(rev schema.Revision) error {
	if len(ki.generations) == 0 || len(ki.generations[len(ki.generations)-1].revs) == 0 {
		return errKeyNotFound
	}
	ki.put(rev)
	ki.generations = append(ki.generations, generation{})
	return nil
}

// isLive reports whether the key exists at the latest revision.
func (ki *keyIndex) isLive() bool {
	return len(ki.generations) > 0 && len(ki.generations[len(ki.generations)-1].revs) > 0
}

// get returns the revision, creation revision and version of the key as of atRev.
func (ki *keyIndex) get(atRev int64) (mod, created schema.Revision, ver int64, err error) {
	for i := len(ki.generations) - 1; i >= 0; i-- {
		g := &ki.generations[i]
		if len(g.revs) == 0 || g.revs[0].Main > atRev {
			continue
		}
		last := i < len(ki.generations)-1 // ended by a tombstone
		if last && g.revs[len(g.revs)-1].Main <= atRev {
			return schema.Revision{}, schema.Revision{}, 0, errKeyNotFound
		}
		n := len(g.revs) - 1
		for n >= 0 && g.revs[n].Main > atRev {
			n--
		}
		return g.revs[n], g.created, g.ver - int64(len(g.revs)-1-n), nil
	}
	return schema.Revision{}, schema.Revision{}, 0, errKeyNotFound
}

// compact drops what compaction at atRev makes unreachable and records in keep the revisions at
// or below atRev that must stay in the backend. It reports whether the index is now empty.
func (ki *keyIndex) compact(atRev int64, keep map[schema.Revision]struct{}) bool {
	gens := ki.generations
	// Whole generations whose tombstone is below atRev are gone. A tombstone at atRev stays,
	// as upstream's: a watch from atRev still sees the deletion (the hash, keepAt, leaves it out).
	i := 0
	for i < len(gens)-1 && gens[i].revs[len(gens[i].revs)-1].Main < atRev {
		i++
	}
	gens = gens[i:]
	g := &gens[0]
	n := len(g.revs) - 1
	for n >= 0 && g.revs[n].Main > atRev {
		n--
	}
	if n >= 0 {
		keep[g.revs[n]] = struct{}{}
		g.revs = g.revs[n:]
	}
	ki.generations = gens
	return len(gens) == 1 && len(gens[0].revs) == 0
}

// keepAt computes what compact would keep, without changing anything.
func (ki *keyIndex) keepAt(atRev int64, keep map[schema.Revision]struct{}) {
	gens := ki.generations
	i := 0
	for i < len(gens)-1 && gens[i].revs[len(gens[i].revs)-1].Main <= atRev {
		i++
	}
	g := gens[i]
	for n := len(g.revs) - 1; n >= 0; n-- {
		if g.revs[n].Main <= atRev {
			keep[g.revs[n]] = struct{}{}
			return
		}
	}
}
