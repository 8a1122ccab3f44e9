package cluster

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/pkg/judge"
)

// Ledger records the writes a cluster acknowledged. Each ledger key is written once, so reading
// them back tells a lost write (missing, or another value) and a write applied twice (a version
// above 1) apart from everything else.
type Ledger struct {
	mu    sync.Mutex
	acked map[string]string
}

// NewLedger is an empty ledger.
func NewLedger() *Ledger { return &Ledger{acked: map[string]string{}} }

// Ack records that key=value was acknowledged.
func (l *Ledger) Ack(key, value string) {
	l.mu.Lock()
	l.acked[key] = value
	l.mu.Unlock()
}

// Acked returns a copy of every acknowledged write.
func (l *Ledger) Acked() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.acked)
}

// Check reads the ledger back from the cluster: see CheckAcked.
func (l *Ledger) Check(ctx context.Context, cli *clientv3.Client, prefix string) (*LedgerCheck, error) {
	return CheckAcked(ctx, cli, prefix, l.Acked())
}

// LedgerCheck is what reading a ledger back found.
type LedgerCheck struct {
	// Checked is the number of acknowledged writes looked for.
	Checked int
	// Lost are the acknowledged keys missing or holding another value, sorted.
	Lost []string
	// AppliedTwice are keys under the prefix written once that show more than one write.
	AppliedTwice []*mvccpb.KeyValue
}

// CheckAcked reads every key under prefix through cli (a linearizable read) and compares it with
// the acknowledged writes.
func CheckAcked(ctx context.Context, cli *clientv3.Client, prefix string, acked map[string]string) (*LedgerCheck, error) {
	r, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read the ledger back: %w", err)
	}
	res := &LedgerCheck{Checked: len(acked)}
	have := make(map[string]string, len(r.Kvs))
	for _, kv := range r.Kvs {
		have[string(kv.Key)] = string(kv.Value)
		if judge.AppliedTwice(kv.Version, kv.CreateRevision, kv.ModRevision) {
			res.AppliedTwice = append(res.AppliedTwice, kv)
		}
	}
	res.Lost = judge.LostWrites(acked, have)
	return res, nil
}
