package lab

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/etcdutl/offline"
	"etcdx/server/membership"
	"etcdx/server/schema"
)

// Rehearsal starts a run from a copy of a real cluster's data instead of an empty one: a
// snapshot file (etcdctl snapshot save), a stopped member's data dir or its member/snap/db,
// restored into every member, with the credentials of a user allowed everything (root) when the data has
// authentication on. The run then judges, besides its usual checks, that the restored data came
// through every step unchanged (the keys outside the lab's own prefix) and so did users, roles
// and permissions.
type Rehearsal struct {
	Snapshot       string
	User, Password string
}

// labPrefix is where every key the lab writes lives (the workload's, the preload's, the lab
// user's); everything else in a rehearsal is the restored data.
const labPrefix = "/upgradelab"

// DataShape is what the restored data holds, for the report and the workload's value size.
type DataShape struct {
	Keys  int   `json:"keys"`
	Bytes int64 `json:"bytes"`
	// ValueP50 is the median value size in bytes.
	ValueP50 int `json:"valueP50"`
	// Prefixes are the keys' prefixes (prefixOf) with their counts, the largest first (at most
	// ten).
	Prefixes []PrefixShape `json:"prefixes,omitempty"`
	// Digest is a hash of every key, value and lease of the restored data.
	Digest string `json:"digest"`
}

// PrefixShape is one prefix's share of the data.
type PrefixShape struct {
	Prefix string `json:"prefix"`
	Keys   int    `json:"keys"`
	Bytes  int64  `json:"bytes"`
}

// RehearsalReport is what a rehearsal found.
type RehearsalReport struct {
	Snapshot string    `json:"snapshot"`
	Shape    DataShape `json:"shape"`
	// WorkloadShape says how the workload's writes took the data's shape.
	WorkloadShape string `json:"workloadShape,omitempty"`
	// DataIntact and AuthIntact say what the end of the run found ("" until judged).
	DataIntact string `json:"dataIntact,omitempty"`
	AuthIntact string `json:"authIntact,omitempty"`
}

// Database is the file a rehearsal restores and whether it carries the integrity hash
// `snapshot save` appends: Snapshot itself, or, when Snapshot is a stopped member's data dir
// (or a copy of one), its member/snap/db. A member's database file has no hash.
func (r Rehearsal) Database() (path string, hashed bool, err error) {
	path = r.Snapshot
	if st, err := os.Stat(path); err != nil {
		return "", false, err
	} else if st.IsDir() {
		path = schema.BackendPath(r.Snapshot)
		if _, err := os.Stat(path); err != nil {
			return "", false, fmt.Errorf("%s is a directory but no data dir: %w", r.Snapshot, err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", false, err
	}
	return path, st.Size()%512 == sha256.Size, nil // as etcdutl snapshot restore tells them apart
}

// restore writes the rehearsal's database into every member's data dir, as etcdutl snapshot
// restore does for a new cluster of these members (checking the hash where there is one).
func (c *members) restore(ctx context.Context, r Rehearsal) error {
	db, hashed, err := r.Database()
	if err != nil {
		return err
	}
	ic, err := membership.ParseInitialCluster(c.initialCluster(nil))
	if err != nil {
		return err
	}
	for _, m := range c.list {
		err := m.Seed(ctx, func(dir string) error {
			return offline.Restore(offline.RestoreConfig{SnapshotPath: db, DataDir: dir, Name: m.Name(), SkipHashCheck: !hashed,
				PeerURLs: []string{m.PeerURL()}, InitialCluster: ic, InitialClusterToken: c.token})
		})
		if err != nil {
			return fmt.Errorf("restore %s into %s: %w", db, m.Name(), err)
		}
	}
	return nil
}

// shapeOf reads the data outside the lab's prefix at one revision, a page at a time.
func shapeOf(ctx context.Context, cli *clientv3.Client) (DataShape, error) {
	var sh DataShape
	h := sha256.New()
	prefixes := map[string]*PrefixShape{}
	var sizes []int
	first, err := cli.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return sh, fmt.Errorf("read the restored data: %w", err)
	}
	rev := first.Header.Revision
	key := "\x00"
	for {
		resp, err := cli.Get(ctx, key, clientv3.WithFromKey(), clientv3.WithLimit(1000), clientv3.WithRev(rev))
		if err != nil {
			return sh, fmt.Errorf("read the restored data: %w", err)
		}
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			if strings.HasPrefix(k, labPrefix) {
				continue
			}
			sh.Keys++
			sh.Bytes += int64(len(kv.Key) + len(kv.Value))
			sizes = append(sizes, len(kv.Value))
			fmt.Fprintf(h, "%q %q %d\n", kv.Key, kv.Value, kv.Lease)
			p := prefixOf(k)
			if prefixes[p] == nil {
				prefixes[p] = &PrefixShape{Prefix: p}
			}
			prefixes[p].Keys++
			prefixes[p].Bytes += int64(len(kv.Key) + len(kv.Value))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	sort.Ints(sizes)
	if len(sizes) > 0 {
		sh.ValueP50 = sizes[len(sizes)/2]
	}
	for _, p := range prefixes {
		sh.Prefixes = append(sh.Prefixes, *p)
	}
	sort.Slice(sh.Prefixes, func(i, j int) bool {
		a, b := sh.Prefixes[i], sh.Prefixes[j]
		return a.Keys > b.Keys || a.Keys == b.Keys && a.Prefix < b.Prefix
	})
	if len(sh.Prefixes) > 10 {
		sh.Prefixes = sh.Prefixes[:10]
	}
	sh.Digest = fmt.Sprintf("%x", h.Sum(nil))
	return sh, nil
}

// prefixOf is the part of a key that names its kind: its first two path elements when it has
// more ("/registry/pods/default/web" -> "/registry/pods", as Kubernetes lays its objects out),
// its first when it has two ("/app/config" -> "/app"), the whole key otherwise.
func prefixOf(k string) string {
	lead := ""
	if strings.HasPrefix(k, "/") {
		lead = "/"
	}
	parts := strings.Split(strings.TrimPrefix(k, "/"), "/")
	switch {
	case len(parts) >= 3:
		return lead + parts[0] + "/" + parts[1]
	case len(parts) == 2:
		return lead + parts[0]
	}
	return k
}

func (s DataShape) String() string {
	var ps []string
	for _, p := range s.Prefixes {
		ps = append(ps, fmt.Sprintf("%s %d", p.Prefix, p.Keys))
	}
	return fmt.Sprintf("%d keys, %d bytes, values %d bytes at the median; %s", s.Keys, s.Bytes, s.ValueP50, strings.Join(ps, ", "))
}

// rehearsalIntact judges, at the end of a rehearsal, that the restored data and its auth state
// came through every step unchanged.
func (r *Runner) rehearsalIntact(ctx context.Context, cli *clientv3.Client, before DataShape, la *labAuth, rep *RehearsalReport) error {
	sctx, cancel := context.WithTimeout(ctx, r.StartTimeout)
	defer cancel()
	after, err := shapeOf(sctx, cli)
	if err != nil {
		return err
	}
	if after.Digest != before.Digest {
		return fmt.Errorf("the restored data changed during the run: %s at the start, %s at the end", before, after)
	}
	rep.DataIntact = fmt.Sprintf("%d keys and %d bytes of the restored data unchanged (sha256 %s)", after.Keys, after.Bytes, after.Digest[:16])
	if la == nil {
		rep.AuthIntact = "not checked: no user given (--user)"
		return nil
	}
	if err := la.unchanged(ctx); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	rep.AuthIntact = fmt.Sprintf("users, roles and permissions unchanged (as %s)", la.user)
	return nil
}
