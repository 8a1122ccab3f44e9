package kubeload

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The resources whose objects the load writes; an API server watches each, and as many more
// (that see nothing) as Shape.WatchedResources says.
var writtenResources = []string{"pods", "minions", "leases", "events", "masterleases", "peerserverleases"}

// watchCtx is the context of API server a's watches: kube-apiserver's watches require a
// leader, and a progress request must carry the same metadata to reach their stream.
func (l *Load) watchCtx(a int) context.Context {
	return l.watchCtxs[a]
}

// openWatches starts every API server's watch of each resource prefix, from the current
// revision, with progress notifications and previous values, as kube-apiserver's watch cache
// does; each PUT event delivered is timed from the write time its value carries. It also
// starts the compactor.
func (l *Load) openWatches(ctx context.Context) error {
	for a, c := range l.clients {
		wctx := clientv3.WithRequireLeader(ctx)
		l.watchCtxs = append(l.watchCtxs, wctx)
		r, err := c.Get(ctx, "compact_rev_key")
		if err != nil {
			return fmt.Errorf("API server %d: %w", a, err)
		}
		from := r.Header.Revision + 1
		names := append([]string(nil), writtenResources...)
		for i := len(names); i < l.s.WatchedResources; i++ {
			names = append(names, fmt.Sprintf("resource-%02d", i))
		}
		for _, res := range names {
			ch := c.Watch(wctx, "/registry/"+res+"/", clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithProgressNotify(), clientv3.WithPrevKV())
			l.watchDone.Add(1)
			go func() {
				defer l.watchDone.Done()
				for wr := range ch {
					if err := wr.Err(); err != nil {
						if ctx.Err() == nil {
							l.rec.fail("watch "+res, err)
						}
						continue
					}
					now := time.Now()
					for _, ev := range wr.Events {
						if ev.Type != clientv3.EventTypePut {
							continue
						}
						if at, ok := writtenAt(ev.Kv.Value); ok {
							l.rec.ok(Delivery, now.Sub(at))
						}
					}
				}
			}()
		}
	}
	l.watchDone.Add(1)
	go func() { defer l.watchDone.Done(); l.compact(ctx) }()
	return nil
}

// compact is kube-apiserver's compactor: every Shape.Compaction, API server 0 claims the round
// (a Txn on compact_rev_key's version) and compacts to the revision of the round before.
func (l *Load) compact(ctx context.Context) {
	if l.s.Compaction <= 0 {
		return
	}
	c := l.clients[0]
	var version, last int64
	t := time.NewTicker(l.s.Compaction)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r, err := c.Txn(ctx).If(clientv3.Compare(clientv3.Version("compact_rev_key"), "=", version)).
			Then(clientv3.OpPut("compact_rev_key", fmt.Sprint(last))).Else(clientv3.OpGet("compact_rev_key")).Commit()
		if err != nil {
			if ctx.Err() == nil {
				l.rec.fail("compaction claim", err)
			}
			continue
		}
		if !r.Succeeded {
			if kvs := r.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
				version = kvs[0].Version
			}
			continue
		}
		version++
		if last > 0 {
			if _, err := c.Compact(ctx, last); err != nil && ctx.Err() == nil {
				l.rec.fail("compaction", err)
			}
		}
		last = r.Header.Revision
	}
}
