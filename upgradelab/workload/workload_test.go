package workload

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/pkg/judge"
	"etcdx/pkg/register"
	"etcdx/server/embed"
)

func freeURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("http://%s", l.Addr())
}

// memberConfig is the configuration of one member of ours on free loopback ports.
func memberConfig(t *testing.T) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(t.TempDir(), "data")
	cu, pu := freeURL(t), freeURL(t)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []string{cu}, []string{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []string{pu}, []string{pu}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg
}

// startMember starts a real member of ours in the test process and waits until it serves.
func startMember(t *testing.T, cfg *embed.Config) *embed.Etcd {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(10 * time.Second):
		t.Fatal("member not ready")
	}
	return e
}

// member starts one real member of ours and a client of it.
func member(t *testing.T) *clientv3.Client {
	cfg := memberConfig(t)
	startMember(t, cfg)
	return client(t, cfg)
}

func client(t *testing.T, cfg *embed.Config) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.AdvertiseClientUrls, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestChecksPassOnAHealthyMemberAndCatchLossAndStaleReads(t *testing.T) {
	cli := member(t)
	w := Start(cli, Config{Clients: 3, Registers: 2, Interval: time.Millisecond, MaxOps: 60, ExpiringLeaseTTL: 1})
	defer w.Close()
	time.Sleep(time.Second)
	w.Stop()
	stats, errs := w.Stats()
	if stats.Acked == 0 || stats.Failed != 0 {
		t.Fatalf("stats %+v, errors %v", stats, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lost, checked, err := w.LostWrites(ctx, 10)
	if err != nil || len(lost) != 0 || checked != stats.Acked {
		t.Fatalf("lost %v of %d (acked %d): %v", lost, checked, stats.Acked, err)
	}
	if verdict, n := w.Linearizable(30 * time.Second); verdict != porcupine.Ok || n == 0 {
		t.Fatalf("history of %d ops: %s", n, verdict)
	}
	// The watcher saw every ledger write (txns write two keys), revisions went forward, the
	// kept lease lives and the other expired.
	if v := w.Verify(ctx); len(v.Problems) != 0 || v.WatchEvents < stats.Acked {
		t.Fatalf("verify: %d watch events for %d acked writes, problems %v", v.WatchEvents, stats.Acked, v.Problems)
	}

	// An acknowledged write that disappears is reported.
	var victim, rewritten string
	for k := range w.ledger.Acked() {
		if victim == "" {
			victim = k
		} else {
			rewritten = k
			break
		}
	}
	if _, err := cli.Delete(ctx, victim); err != nil {
		t.Fatal(err)
	}
	if lost, _, _ := w.LostWrites(ctx, 10); len(lost) != 1 || lost[0] != victim {
		t.Fatalf("lost %v, want [%s]", lost, victim)
	}
	// A ledger key written a second time (an entry applied twice) is told apart from a loss.
	if _, err := cli.Put(ctx, rewritten, w.ledger.Acked()[rewritten]); err != nil {
		t.Fatal(err)
	}
	res, err := w.ledger.Check(ctx, cli, w.cfg.Prefix+"/ledger/")
	if err != nil || len(res.Lost) != 1 || len(res.AppliedTwice) != 1 || string(res.AppliedTwice[0].Key) != rewritten {
		t.Fatalf("ledger check %+v, %v; want %s lost and %s applied twice", res, err, victim, rewritten)
	}

	// A read of a value nobody wrote makes the history illegal.
	t0 := w.now()
	w.record(Op{Client: 9, Key: w.cfg.Prefix + "/reg/0", Value: "never-written", Call: t0, Return: w.now()})
	if verdict, _ := w.Linearizable(30 * time.Second); verdict != porcupine.Illegal {
		t.Fatalf("a stale read passed the check: %s", verdict)
	}
}

func TestUnknownWritesMayOrMayNotHaveHappened(t *testing.T) {
	w := &Workload{start: time.Now()}
	key := "/r"
	// A write that failed (outcome unknown) and a later read that did not see it: legal.
	w.record(Op{Key: key, Write: true, Value: "a", Call: 10, Return: register.Unknown})
	w.record(Op{Key: key, Value: "", Call: 20, Return: 30})
	if v, _ := w.Linearizable(10 * time.Second); v != porcupine.Ok {
		t.Fatalf("unseen unknown write: %s", v)
	}
	// ... and a read that did see it: also legal.
	w.record(Op{Key: key, Value: "a", Call: 40, Return: 50})
	if v, _ := w.Linearizable(10 * time.Second); v != porcupine.Ok {
		t.Fatalf("seen unknown write: %s", v)
	}
	// But once seen it cannot be unseen.
	w.record(Op{Key: key, Value: "", Call: 60, Return: 70})
	if v, _ := w.Linearizable(10 * time.Second); v != porcupine.Illegal {
		t.Fatalf("a write seen and then lost passed: %s", v)
	}
}

func TestPreloadWritesTheSizeAsked(t *testing.T) {
	cli := member(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Preload(ctx, cli, "/preload/", 200*1024+1)
	if err != nil || n != 201 {
		t.Fatalf("preload: %d keys, %v", n, err)
	}
	r, err := cli.Get(ctx, "/preload/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 201 {
		t.Fatalf("count %v, %v", r, err)
	}
}

// Writes of unknown outcome are settled by the store's history: one that took effect is kept
// with the latest moment it can have, one that never did is left out; a compacted history
// leaves them open and says why.
func TestNarrowUnknownWithTheStoresHistory(t *testing.T) {
	cli := member(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := &Workload{cli: cli, cfg: Config{Prefix: "/narrow"}, start: time.Now()}
	key := "/narrow/reg/0"
	put, err := cli.Put(ctx, key, "applied") // its client never heard back
	if err != nil {
		t.Fatal(err)
	}
	w.record(Op{Client: 0, Key: key, Write: true, Value: "applied", Call: 10, Return: register.Unknown})
	w.record(Op{Client: 0, Key: key, Write: true, Value: "never", Call: 20, Return: register.Unknown})
	w.record(Op{Client: 1, Key: key, Value: "applied", Call: 30, Return: 40, Rev: put.Header.Revision})
	before, after, err := w.NarrowUnknown(ctx)
	if err != nil || before != 2 || after != 0 {
		t.Fatalf("narrowed %d -> %d: %v", before, after, err)
	}
	if verdict, n := w.Linearizable(10 * time.Second); verdict != porcupine.Ok || n != 2 {
		t.Fatalf("%d operations after narrowing: %s", n, verdict)
	}
	for _, op := range w.ops {
		if op.Value == "applied" && op.Write && (op.Return != 40 || op.Rev != put.Header.Revision) {
			t.Fatalf("the applied write: %+v", op)
		}
	}

	w.record(Op{Client: 0, Key: key, Write: true, Value: "later", Call: 50, Return: register.Unknown})
	r, err := cli.Put(ctx, "/narrow/other", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, r.Header.Revision); err != nil {
		t.Fatal(err)
	}
	before, after, err = w.NarrowUnknown(ctx)
	if err == nil || before != 1 || after != 1 {
		t.Fatalf("on a compacted history: %d -> %d, %v", before, after, err)
	}
}

// TestPickSpreadsByWeight: the ledger's prefixes are drawn in proportion to the data's key
// counts, a prefix of weight 0 never, and every one comes back with a leading "/".
func TestPickSpreadsByWeight(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	spread := []WeightedPrefix{{"/registry", 3}, {"compact_rev_key", 1}, {"/never", 0}}
	got := map[string]int{}
	for i := 0; i < 4000; i++ {
		got[pick(rng, spread)]++
	}
	if got["/never"] != 0 || got["/registry"] < 2800 || got["/registry"] > 3200 || got["/compact_rev_key"] < 800 || got["/compact_rev_key"] > 1200 {
		t.Errorf("draws %v, want about 3000 /registry and 1000 /compact_rev_key", got)
	}
	if p := pick(rng, nil); p != "" {
		t.Errorf("no spread drew %q", p)
	}
}

// The client library stops keeping a lease alive once its TTL passes without an answer; a
// member that was down longer than that gives the lease a fresh TTL when it comes back, and the
// keeper must keep it alive from there. A lease the cluster has dropped is reported.
func TestKeptLeaseOutlivesAnOutageLongerThanItsTTL(t *testing.T) {
	const keptTTL = 2
	cfg := memberConfig(t)
	e := startMember(t, cfg)
	cli := client(t, cfg)
	l := startLeases(cli, "/outage/lease/", keptTTL, 1)
	defer l.close()
	answered := func() time.Time { l.mu.Lock(); defer l.mu.Unlock(); return l.lastAnswer }
	for deadline := time.Now().Add(10 * time.Second); answered().IsZero(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the leases were not granted")
		}
	}

	e.Close()
	time.Sleep(2*keptTTL*time.Second + time.Second) // the outage: longer than the TTL
	startMember(t, cfg)
	// Long enough after the restart for a lease nobody keeps alive to expire.
	before := answered()
	time.Sleep(2 * keptTTL * time.Second)
	if !answered().After(before) {
		t.Fatal("the keeper got no keep-alive answer after the member came back")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if problems := l.verify(ctx, cli); len(problems) != 0 {
		t.Fatalf("after an outage of %ds with a TTL of %ds: %v", 2*keptTTL+1, keptTTL, problems)
	}

	// A lease the cluster no longer has is lost, however it went.
	if _, err := cli.Revoke(ctx, l.kept); err != nil {
		t.Fatal(err)
	}
	problems := l.verify(ctx, cli)
	for deadline := time.Now().Add(10 * time.Second); len(problems) < 3 && time.Now().Before(deadline); problems = l.verify(ctx, cli) {
		time.Sleep(100 * time.Millisecond)
	}
	if len(problems) != 3 || !strings.HasPrefix(problems[0], string(judge.LeaseExpiredEarly)+": the cluster dropped the lease") {
		t.Fatalf("after a revoke: %q, want the dropped lease, its key gone and its TTL", problems)
	}
}
