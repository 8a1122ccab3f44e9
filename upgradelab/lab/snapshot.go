package lab

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/plan"
)

// snapshotFiller is the one key the snapshot step overwrites: each write is one raft entry,
// and the keyspace does not grow.
const snapshotFiller = labPrefix + "/snapshot-filler"

// defaultSnapshotEntries bounds a snapshot step's writes: more than 3.5's default
// --snapshot-count (100,000), the largest of the lines the lab runs.
const defaultSnapshotEntries = 150_000

// snapshot waits until every running member has saved a snapshot since the step began,
// overwriting one key under the lab's prefix meanwhile (a member saves one every
// --snapshot-count applied entries). It says how many writes it took.
func (r *run) snapshot(ctx context.Context, s *plan.Snapshot) (string, error) {
	limit := s.MaxEntries
	if limit == 0 {
		limit = defaultSnapshotEntries
	}
	marks := map[string]cluster.Metrics{}
	for _, m := range r.c.list {
		if !m.Running(ctx) {
			continue
		}
		mt, err := m.Metrics(ctx)
		if err != nil {
			return "", fmt.Errorf("member %s: %w", m.Name(), err)
		}
		if mt.SnapshotsSaved < 0 {
			return "", fmt.Errorf("member %s serves no etcd_debugging_snap_save_total_duration_seconds", m.Name())
		}
		marks[m.Name()] = mt
	}
	waiting := func() []string {
		var out []string
		for _, m := range r.c.list {
			before, ok := marks[m.Name()]
			if !ok {
				continue
			}
			if now, err := m.Metrics(ctx); err != nil || !now.SavedSnapshotSince(before) {
				out = append(out, m.Name())
			}
		}
		sort.Strings(out)
		return out
	}
	const writers, batch = 32, 2000 // concurrent writers; writes between looks at the metrics
	written := 0
	for left := waiting(); len(left) > 0; left = waiting() {
		if written >= limit {
			return "", fmt.Errorf("no snapshot saved by %s after %d writes", strings.Join(left, ", "), written)
		}
		g, gctx := errgroup.WithContext(ctx)
		for w := 0; w < writers; w++ {
			g.Go(func() error {
				for i := 0; i < batch/writers; i++ {
					wctx, cancel := context.WithTimeout(gctx, 10*time.Second)
					_, err := r.cli.Put(wctx, snapshotFiller, fmt.Sprint(written+w*batch/writers+i))
					cancel()
					if err != nil {
						return fmt.Errorf("write %s: %w", snapshotFiller, err)
					}
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return "", err
		}
		written += batch / writers * writers
	}
	return fmt.Sprintf("every member saved a snapshot after %d filler writes", written), nil
}
