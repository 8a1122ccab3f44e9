package cluster

import (
	"context"
	"fmt"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/pkg/judge"
)

// Hashes asks each member (name -> client URL) for its HashKV at one revision, the cluster's
// current one as c reads it, waiting until ctx ends for a member still applying up to it.
// judge.Hashes says whether they agree.
func Hashes(ctx context.Context, c *clientv3.Client, members map[string]string) (map[string]judge.MemberHash, error) {
	resp, err := c.Get(ctx, "hashkv-probe")
	if err != nil {
		return nil, fmt.Errorf("hashkv: read the revision: %w", err)
	}
	rev := resp.Header.Revision
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]judge.MemberHash{}
	for _, n := range names {
		for {
			h, err := c.HashKV(ctx, members[n], rev)
			if err == nil {
				out[n] = judge.MemberHash{Hash: h.Hash, CompactRevision: h.CompactRevision, Revision: rev}
				break
			}
			select {
			case <-ctx.Done():
				return out, fmt.Errorf("hashkv of %s at revision %d: %w", n, rev, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return out, nil
}
