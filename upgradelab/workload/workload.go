package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/pkg/judge"
	"etcdx/pkg/register"
	"etcdx/upgradelab/cluster"
)

// Config shapes the traffic.
type Config struct {
	// Clients is the number of concurrent clients; each alternates between a ledger write and
	// a read or write of one of Registers keys.
	Clients   int
	Registers int
	// Interval is the pause between one client's operations; MaxOps bounds each client.
	Interval time.Duration
	MaxOps   int
	// Prefix keeps the workload's keys apart.
	Prefix string
	// HistoryLimit bounds the register operations kept for the linearizability check; the
	// register traffic stops there (the rest goes on), so the check stays tractable.
	HistoryLimit int
	// KeptLeaseTTL is the TTL of the lease kept alive through the run; ExpiringLeaseTTL that
	// of the lease left to expire (seconds).
	KeptLeaseTTL, ExpiringLeaseTTL int64
	// ValueSize pads each ledger value to this many bytes (0: none), so the writes are shaped
	// like the data a rehearsal restored.
	ValueSize int
	// KeySpread spreads the ledger keys over these prefixes (under Prefix/ledger), each drawn
	// in proportion to its weight: the key prefixes of the data a rehearsal restored, with
	// their key counts. Empty: one flat ledger.
	KeySpread []WeightedPrefix
}

// WeightedPrefix is a key prefix and how often the workload writes under it.
type WeightedPrefix struct {
	Prefix string
	Weight int
}

// pick draws a prefix by weight ("" when there is none to draw), always with a leading "/".
func pick(rng *rand.Rand, spread []WeightedPrefix) string {
	total := 0
	for _, p := range spread {
		total += max(p.Weight, 0)
	}
	if total == 0 {
		return ""
	}
	n := rng.IntN(total)
	for _, p := range spread {
		if n -= max(p.Weight, 0); n < 0 {
			return "/" + strings.TrimPrefix(p.Prefix, "/")
		}
	}
	return ""
}

// Op is one register operation as porcupine sees it (register.Unknown as its Return marks a
// write whose outcome the client did not learn).
type Op = register.Op

// Stats counts what happened.
type Stats struct {
	Writes, Reads, Failed int
	// Acked are ledger keys whose writes the cluster acknowledged.
	Acked int
}

// Workload runs until stopped.
type Workload struct {
	cfg   Config
	cli   *clientv3.Client
	start time.Time
	// firstRev is the first revision the workload could have written (0: not known).
	firstRev int64

	ledger *cluster.Ledger

	mu      sync.Mutex
	ops     []Op
	samples []Sample
	stats   Stats
	errors  map[string]int
	// acked are the ledger writes with the revision they were written at (for the watch
	// check); revs the revisions each client's linearizable requests saw.
	acked []judge.Event
	revs  map[int][]judge.Seen
	// anomalies are answers no correct cluster gives (e.g. a txn finding its fresh key taken).
	anomalies []string

	watch  *watcher
	leases *leases

	stop chan struct{}
	wg   sync.WaitGroup
}

// Start begins the traffic through cli.
func Start(cli *clientv3.Client, cfg Config) *Workload {
	if cfg.Clients <= 0 {
		cfg.Clients = 4
	}
	if cfg.Registers <= 0 {
		cfg.Registers = 4
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Millisecond
	}
	if cfg.MaxOps <= 0 {
		cfg.MaxOps = 20000
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/upgradelab"
	}
	if cfg.HistoryLimit <= 0 {
		cfg.HistoryLimit = 20000
	}
	if cfg.KeptLeaseTTL <= 0 {
		cfg.KeptLeaseTTL = 10
	}
	if cfg.ExpiringLeaseTTL <= 0 {
		cfg.ExpiringLeaseTTL = 3
	}
	w := &Workload{cfg: cfg, cli: cli, start: time.Now(), ledger: cluster.NewLedger(), errors: map[string]int{},
		revs: map[int][]judge.Seen{}, stop: make(chan struct{})}
	// The register history NarrowUnknown reads begins after what the cluster held before the
	// workload (a restored snapshot's own history may be compacted).
	gctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	if r, err := cli.Get(gctx, cfg.Prefix+"/reg/", clientv3.WithCountOnly()); err == nil {
		w.firstRev = r.Header.Revision + 1
	}
	cancel()
	w.watch = startWatcher(cli, cfg.Prefix+"/ledger/")
	// Let the watcher take its start revision before the clients write, so it owes every
	// ledger write (bounded: a cluster that does not answer yet must not hold the run up).
	select {
	case <-w.watch.ready:
	case <-time.After(opTimeout):
	}
	w.leases = startLeases(cli, cfg.Prefix+"/lease/", cfg.KeptLeaseTTL, cfg.ExpiringLeaseTTL)
	for i := 0; i < cfg.Clients; i++ {
		w.wg.Add(1)
		go w.client(i)
	}
	return w
}

// Stop ends the client traffic and waits for in-flight requests; the watcher and the kept
// lease go on until Close, so Verify can still judge them.
func (w *Workload) Stop() {
	close(w.stop)
	w.wg.Wait()
}

// Close ends the watcher and the lease keeper.
func (w *Workload) Close() {
	w.watch.close()
	w.leases.close()
}

func (w *Workload) now() int64 { return time.Since(w.start).Nanoseconds() }

// Offset is t as the workload's clock reads it (nanoseconds since it started), to cut
// windows of its samples.
func (w *Workload) Offset(t time.Time) int64 { return t.Sub(w.start).Nanoseconds() }

// Samples returns a copy of every request's timing and outcome so far.
func (w *Workload) Samples() []Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Sample(nil), w.samples...)
}

func (w *Workload) client(id int) {
	defer w.wg.Done()
	rng := rand.New(rand.NewPCG(uint64(id), uint64(w.start.UnixNano())))
	for seq := 0; seq < w.cfg.MaxOps; seq++ {
		select {
		case <-w.stop:
			return
		case <-time.After(w.cfg.Interval):
		}
		// The ledger: a fresh key per write, never overwritten, so a lost write shows.
		key := fmt.Sprintf("%s/ledger%s/c%d/%08d", w.cfg.Prefix, pick(rng, w.cfg.KeySpread), id, seq)
		val := strconv.Itoa(seq)
		if pad := w.cfg.ValueSize - len(val); pad > 0 {
			val += strings.Repeat(".", pad)
		}
		if rev, err := w.put(key, val); err == nil {
			w.ack(id, "put", rev, key, val)
		}
		reg := fmt.Sprintf("%s/reg/%d", w.cfg.Prefix, rng.IntN(w.cfg.Registers))
		switch n := rng.IntN(20); {
		case n < 3:
			w.txn(id, key, val)
		case n < 6:
			w.serializableRead(reg)
		case w.historyFull():
			// The register history is as long as the check can take: no more register ops.
		case n < 13:
			w.writeRegister(id, reg, fmt.Sprintf("c%d-%d", id, seq))
		default:
			w.readRegister(id, reg)
		}
	}
}

// ack records an acknowledged ledger write and the revision the client saw.
func (w *Workload) ack(id int, op string, rev int64, key, val string) {
	w.ledger.Ack(key, val)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Acked++
	w.acked = append(w.acked, judge.Event{Key: key, Rev: rev})
	w.revs[id] = append(w.revs[id], judge.Seen{Op: op, Revision: rev})
}

func (w *Workload) historyFull() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ops) >= w.cfg.HistoryLimit
}

// txn writes two fresh ledger keys atomically, guarded by the first not existing yet.
func (w *Workload) txn(id int, base, val string) {
	k1, k2 := base+"-t1", base+"-t2"
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	start := w.now()
	resp, err := w.cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(k1), "=", 0)).
		Then(clientv3.OpPut(k1, val), clientv3.OpPut(k2, val)).Commit()
	w.count(true, start, err)
	if err != nil {
		return
	}
	if !resp.Succeeded {
		w.mu.Lock()
		w.anomalies = append(w.anomalies, fmt.Sprintf("txn on fresh key %s found it written already", k1))
		w.mu.Unlock()
		return
	}
	w.ack(id, "txn", resp.Header.Revision, k1, val)
	w.ack(id, "txn", resp.Header.Revision, k2, val)
}

// serializableRead reads a register from whichever member answers, without consensus: it may
// be stale, so it joins neither the linearizability nor the revision checks.
func (w *Workload) serializableRead(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	start := w.now()
	_, err := w.cli.Get(ctx, key, clientv3.WithSerializable())
	w.count(false, start, err)
}

const opTimeout = 5 * time.Second

// put writes key and returns the revision it was written at.
func (w *Workload) put(key, val string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	start := w.now()
	resp, err := w.cli.Put(ctx, key, val)
	w.count(true, start, err)
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// count adds a request that began at start (workload time) and ended now.
func (w *Workload) count(write bool, start int64, err error) {
	s := Sample{Start: start, End: w.now(), Write: write}
	w.mu.Lock()
	defer w.mu.Unlock()
	if write {
		w.stats.Writes++
	} else {
		w.stats.Reads++
	}
	if err != nil {
		s.Err = ErrorClass(err)
		w.stats.Failed++
		w.errors[s.Err]++
	}
	w.samples = append(w.samples, s)
}

func (w *Workload) writeRegister(id int, key, val string) {
	call := w.now()
	rev, err := w.put(key, val)
	if err == nil {
		w.mu.Lock()
		w.revs[id] = append(w.revs[id], judge.Seen{Op: "put", Revision: rev})
		w.mu.Unlock()
	}
	op := Op{Client: id, Key: key, Write: true, Value: val, Call: call, Return: w.now(), Rev: rev}
	if err != nil {
		// The write may still take effect at any later time.
		op.Return, op.Rev = register.Unknown, 0
	}
	w.record(op)
}

func (w *Workload) readRegister(id int, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	call := w.now()
	resp, err := w.cli.Get(ctx, key)
	ret := w.now()
	w.count(false, call, err)
	if err != nil {
		return // a failed read observed nothing
	}
	val := ""
	if len(resp.Kvs) > 0 {
		val = string(resp.Kvs[0].Value)
	}
	w.mu.Lock()
	w.revs[id] = append(w.revs[id], judge.Seen{Op: "get", Revision: resp.Header.Revision})
	w.mu.Unlock()
	w.record(Op{Client: id, Key: key, Value: val, Call: call, Return: ret, Rev: resp.Header.Revision})
}

func (w *Workload) record(op Op) {
	w.mu.Lock()
	w.ops = append(w.ops, op)
	w.mu.Unlock()
}

// Stats returns the counters and the error classes seen.
func (w *Workload) Stats() (Stats, map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	errs := map[string]int{}
	for k, v := range w.errors {
		errs[k] = v
	}
	return w.stats, errs
}

// LostWrites reads the ledger back and returns the acknowledged keys that are missing or hold
// another value (at most limit of them), and how many were checked.
func (w *Workload) LostWrites(ctx context.Context, limit int) ([]string, int, error) {
	res, err := w.ledger.Check(ctx, w.cli, w.cfg.Prefix+"/ledger/")
	if err != nil {
		return nil, 0, err
	}
	return res.Lost[:min(limit, len(res.Lost))], res.Checked, nil
}

// Linearizable checks the register history with porcupine within timeout; it returns
// porcupine's verdict (Ok, Illegal or Unknown on timeout) and the number of operations.
func (w *Workload) Linearizable(timeout time.Duration) (porcupine.CheckResult, int) {
	w.mu.Lock()
	ops := append([]Op(nil), w.ops...)
	w.mu.Unlock()
	return register.Check(ops, timeout), len(ops)
}

// NarrowUnknown reads the register keys' history from the cluster (a watch from the revision the
// workload began at, up
// to a marker it writes) and narrows the writes of unknown outcome with it
// (register.ResolveUnknown): one whose value never appeared is left out, one that did gets the
// latest moment it can have taken effect. Porcupine's search grows with every open-ended write,
// and a member stopped under load leaves many. A compacted history leaves them as they are (the
// error says so). It reports how many such writes there were and how many are left open.
func (w *Workload) NarrowUnknown(ctx context.Context) (before, after int, err error) {
	w.mu.Lock()
	before = openWrites(w.ops)
	w.mu.Unlock()
	prefix := w.cfg.Prefix + "/reg/"
	marker := prefix + "~history-read"
	r, err := w.cli.Put(ctx, marker, "x")
	if err != nil {
		return before, before, fmt.Errorf("write the history marker: %w", err)
	}
	writes := register.Writes{}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := false
	for resp := range w.cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(max(1, w.firstRev))) {
		if err := resp.Err(); err != nil {
			return before, before, fmt.Errorf("read the register history: %w", err)
		}
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypePut {
				writes.Put(string(ev.Kv.Key), string(ev.Kv.Value), ev.Kv.ModRevision)
			}
			done = done || ev.Kv.ModRevision >= r.Header.Revision
		}
		if done {
			break
		}
	}
	if !done {
		return before, before, fmt.Errorf("the register history ended before revision %d: %w", r.Header.Revision, ctx.Err())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ops = register.ResolveUnknown(w.ops, writes.Applied)
	return before, openWrites(w.ops), nil
}

func openWrites(ops []Op) (n int) {
	for _, op := range ops {
		if op.Write && op.Return == register.Unknown {
			n++
		}
	}
	return n
}
