package e2e

import (
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestHashKVAsUpstream: HashKV of ours and of upstream 3.7.3 after the same history (a key
// written, deleted and written again three times, compacted at its first two deletions) answer
// the same hash, hash revision and compact revision at every revision asked: at a recent
// compaction's revision (even one a later compaction passed) the compaction's own hash, as
// upstream's; elsewhere the key bucket up to the revision, a deletion at the compacted revision
// left out. Compact hash checks (--compact-hash-check-time) compare exactly these across members.
func TestHashKVAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	type answer struct {
		hash               uint32
		hashRev, compacted int64
		err                string
	}
	run := func(bin string) []answer {
		m := NewMember(t)
		m.Bin = bin
		m.Start()
		c := m.Client()
		var dels []int64
		for round := 0; round < 4; round++ {
			for i := range 9 {
				if _, err := c.Put(Ctx(t), "key0", fmt.Sprint(i)); err != nil {
					t.Fatal(err)
				}
			}
			if round < 3 {
				r, err := c.Delete(Ctx(t), "key0")
				if err != nil {
					t.Fatal(err)
				}
				dels = append(dels, r.Header.Revision)
			}
		}
		for _, rev := range dels[:2] {
			if _, err := c.Compact(Ctx(t), rev, clientv3.WithCompactPhysical()); err != nil {
				t.Fatal(err)
			}
		}
		var out []answer
		for _, rev := range []int64{dels[0] - 1, dels[0], dels[1], dels[1] + 1, dels[2], 0} {
			r, err := c.HashKV(Ctx(t), m.ClientURL, rev)
			if err != nil {
				out = append(out, answer{err: err.Error()})
				continue
			}
			out = append(out, answer{hash: r.Hash, hashRev: r.HashRevision, compacted: r.CompactRevision})
		}
		m.Stop()
		return out
	}
	up, ours := run(UpstreamBinaryAt(t, Upstream37Version, "etcd")), run(ServerAt(t, CurrentLevel))
	for i := range up {
		if up[i] != ours[i] {
			t.Errorf("HashKV %d: upstream %+v, ours %+v", i, up[i], ours[i])
		}
	}
}
