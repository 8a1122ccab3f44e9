package kubeload

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"etcdx/pkg/rangestream"
)

// maxInFlight bounds the requests waiting at once; past it a request counts as failed (the
// member is that far behind) instead of piling up in the load's own memory.
const maxInFlight = 20000

// object is one key the load writes and the mod revision it last saw of it.
type object struct {
	key string
	rev atomic.Int64
}

// Load plays a cluster's API servers against one etcd cluster. Populate adds nodes (with their
// leases and pods); Run sends the steady load for a window and returns its figures.
type Load struct {
	s        Shape
	clients  []*clientv3.Client // one per API server
	rec      recorder
	inFlight atomic.Int64

	mu         sync.Mutex
	rnd        *rand.Rand
	nodes      []*object
	nodeLeases []*object
	pods       [][]*object // running pods by node
	podSeq     int
	eventLease []clientv3.LeaseID // per API server, replaced every EventLeaseReuse
	noStream   bool               // the member has no RangeStream (before 3.7)

	watchCtxs []context.Context // per API server
	watchStop context.CancelFunc
	watchDone sync.WaitGroup
	filler    []byte
}

// New connects one client per API server, to its own member of endpoints when the shape is
// stacked and to all of them otherwise (the client spreads its requests over them, as
// kube-apiserver over its --etcd-servers), and opens the API servers' watches.
func New(ctx context.Context, endpoints []string, s Shape) (*Load, error) {
	l := &Load{s: s, rnd: rand.New(rand.NewSource(s.Seed)), filler: make([]byte, 64<<10)}
	for i := range l.filler {
		l.filler[i] = byte('a' + i%26)
	}
	for i := 0; i < s.APIServers; i++ {
		eps := endpoints
		if s.Stacked && len(endpoints) > 0 {
			eps = endpoints[i%len(endpoints) : i%len(endpoints)+1]
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second,
			MaxCallRecvMsgSize: 1 << 30, DialKeepAliveTime: 30 * time.Second,
			Logger: zap.NewNop()}) // its retries' warnings: the failures are counted instead
		if err != nil {
			l.Close()
			return nil, err
		}
		l.clients = append(l.clients, c)
	}
	l.eventLease = make([]clientv3.LeaseID, s.APIServers)
	for a := range l.clients {
		if err := l.grantEventLease(ctx, a); err != nil {
			l.Close()
			return nil, err
		}
	}
	wctx, cancel := context.WithCancel(context.Background())
	l.watchStop = cancel
	if err := l.openWatches(wctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Close ends the watches and the clients.
func (l *Load) Close() {
	if l.watchStop != nil {
		l.watchStop()
		l.watchDone.Wait()
	}
	for _, c := range l.clients {
		c.Close()
	}
}

// Nodes is how many nodes the load plays now.
func (l *Load) Nodes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.nodes)
}

// value is an object of n bytes as kube-apiserver stores it ("k8s\x00" and a protobuf body):
// its first bytes after the magic carry the time it was written, which watchers read back.
func (l *Load) value(n int) string {
	n = max(n, 12)
	b := make([]byte, n)
	copy(b, "k8s\x00")
	binary.BigEndian.PutUint64(b[4:], uint64(time.Now().UnixNano()))
	for off := 12; off < n; off += copy(b[off:], l.filler) {
	}
	return string(b)
}

func writtenAt(v []byte) (time.Time, bool) {
	if len(v) < 12 || string(v[:4]) != "k8s\x00" {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v[4:12]))), true
}

func (l *Load) client(i int) *clientv3.Client { return l.clients[i%len(l.clients)] }

// create is kube-apiserver's create: a Txn putting the key only if it does not exist.
func (l *Load) create(ctx context.Context, api int, o *object, size int, opts ...clientv3.OpOption) error {
	r, err := l.client(api).Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(o.key), "=", 0)).
		Then(clientv3.OpPut(o.key, l.value(size), opts...)).Commit()
	if err != nil {
		return err
	}
	if !r.Succeeded {
		return fmt.Errorf("create %s: exists", o.key)
	}
	o.rev.Store(r.Header.Revision)
	return nil
}

// update is kube-apiserver's GuaranteedUpdate from the object it holds: a Txn putting the new
// value if the mod revision is still the one it holds, else reading the object (and trying
// again from it, as kube-apiserver does on a conflict).
func (l *Load) update(ctx context.Context, api int, o *object, size int) error {
	for try := 0; try < 3; try++ {
		r, err := l.client(api).Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(o.key), "=", o.rev.Load())).
			Then(clientv3.OpPut(o.key, l.value(size))).Else(clientv3.OpGet(o.key)).Commit()
		if err != nil {
			return err
		}
		if r.Succeeded {
			o.rev.Store(r.Header.Revision)
			return nil
		}
		kvs := r.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return fmt.Errorf("update %s: gone", o.key)
		}
		o.rev.Store(kvs[0].ModRevision)
	}
	return fmt.Errorf("update %s: conflicts", o.key)
}

// remove is kube-apiserver's delete: a Txn deleting the key at the mod revision it holds.
func (l *Load) remove(ctx context.Context, api int, o *object) error {
	r, err := l.client(api).Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(o.key), "=", o.rev.Load())).
		Then(clientv3.OpDelete(o.key)).Else(clientv3.OpGet(o.key)).Commit()
	if err != nil {
		return err
	}
	if !r.Succeeded {
		return fmt.Errorf("delete %s: changed", o.key)
	}
	return nil
}

// read is a single-object GET that reaches etcd (linearizable, limit 1, as recorded).
func (l *Load) read(ctx context.Context, api int, key string) error {
	_, err := l.client(api).Get(ctx, key, clientv3.WithLimit(1))
	return err
}

func (l *Load) grantEventLease(ctx context.Context, api int) error {
	g, err := l.client(api).Grant(ctx, int64((l.s.EventTTL + l.s.EventLeaseReuse).Seconds()))
	if err != nil {
		return fmt.Errorf("grant the events' lease: %w", err)
	}
	l.mu.Lock()
	l.eventLease[api] = g.ID
	l.mu.Unlock()
	return nil
}

func (l *Load) event(ctx context.Context, api int, ns, pod string) error {
	l.mu.Lock()
	lease := l.eventLease[api%len(l.eventLease)]
	l.podSeq++
	key := fmt.Sprintf("/registry/events/%s/%s.%x", ns, pod, l.podSeq)
	l.mu.Unlock()
	return l.create(ctx, api, &object{key: key}, l.s.EventBytes, clientv3.WithLease(lease))
}

func (l *Load) namespace(i int) string { return fmt.Sprintf("ns-%03d", i%max(l.s.Namespaces, 1)) }

// newPod names the next pod of node n.
func (l *Load) newPod(node int) (*object, string, string) {
	l.mu.Lock()
	l.podSeq++
	seq := l.podSeq
	l.mu.Unlock()
	ns, name := l.namespace(seq), fmt.Sprintf("app-%03d-5d8f7c9b6d-%07d", seq%200, seq)
	return &object{key: "/registry/pods/" + ns + "/" + name}, ns, name
}

// Populate adds nodes until there are n: each with its node object, its lease and its pods,
// written as fast as the cluster takes them (not measured).
func (l *Load) Populate(ctx context.Context, n int) error {
	from := l.Nodes()
	width := 64
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	var firstErr error
	var errMu sync.Mutex
	do := func(fn func() error) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(); err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		}()
	}
	for i := from; i < n && ctx.Err() == nil; i++ {
		node := &object{key: fmt.Sprintf("/registry/minions/node-%05d", i)}
		lease := &object{key: fmt.Sprintf("/registry/leases/kube-node-lease/node-%05d", i)}
		l.mu.Lock()
		l.nodes = append(l.nodes, node)
		l.nodeLeases = append(l.nodeLeases, lease)
		l.pods = append(l.pods, nil)
		l.mu.Unlock()
		do(func() error { return l.create(ctx, i, node, l.s.NodeBytes) })
		do(func() error { return l.create(ctx, i, lease, l.s.LeaseBytes) })
		for p := 0; p < l.s.PodsPerNode; p++ {
			do(func() error {
				pod, _, _ := l.newPod(i)
				if err := l.create(ctx, i, pod, l.s.PodBytes); err != nil {
					return err
				}
				l.mu.Lock()
				l.pods[i] = append(l.pods[i], pod)
				l.mu.Unlock()
				return nil
			})
		}
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// spawn runs fn now in a goroutine of its own, counted against maxInFlight; what fn measures
// counts from due (the time the schedule said), so waiting for the member shows.
func (l *Load) spawn(wg *sync.WaitGroup, what string, fn func()) {
	if l.inFlight.Add(1) > maxInFlight {
		l.inFlight.Add(-1)
		l.rec.fail(what, errors.New("too many requests in flight: the load outran the cluster"))
		return
	}
	wg.Add(1)
	go func() {
		defer func() { l.inFlight.Add(-1); wg.Done() }()
		fn()
	}()
}

// timed runs one request of class c due at due, recording its latency or its failure.
func (l *Load) timed(c Class, what string, due time.Time, req func() error) bool {
	if err := req(); err != nil {
		l.rec.fail(what, err)
		return false
	}
	l.rec.ok(c, time.Since(due))
	return true
}

// every calls fn(i, due) for i in 0..n()-1 spread evenly over each period, period after
// period, until ctx ends. n is read at each period's start (nodes grow between windows).
func every(ctx context.Context, wg *sync.WaitGroup, period time.Duration, n func() int, fn func(i int, due time.Time)) {
	if period <= 0 {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		for round := 0; ; round++ {
			cnt := n()
			base := start.Add(time.Duration(round) * period)
			if cnt == 0 { // nothing to send this period
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(base.Add(period))):
				}
				continue
			}
			for i := 0; i < cnt; i++ {
				due := base.Add(time.Duration(int64(period) * int64(i) / int64(cnt)))
				if d := time.Until(due); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				} else if ctx.Err() != nil {
					return
				}
				fn(i, due)
			}
		}
	}()
}

// Run sends the steady load for d and returns the window's figures.
func (l *Load) Run(ctx context.Context, d time.Duration) Result {
	l.rec.take() // what populate and the watches saw before does not count
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var sched, reqs sync.WaitGroup
	s := l.s
	nodes := l.Nodes
	// kubelets: lease renewals and node status
	every(rctx, &sched, s.LeaseRenew, nodes, func(i int, due time.Time) {
		o := l.nodeLeases[i]
		l.spawn(&reqs, "lease renewal", func() {
			l.timed(Mutating, "renew "+o.key, due, func() error { return l.update(ctx, i, o, s.LeaseBytes) })
		})
	})
	every(rctx, &sched, s.NodeStatus, nodes, func(i int, due time.Time) {
		o := l.nodes[i]
		l.spawn(&reqs, "node status", func() {
			l.timed(Mutating, "status "+o.key, due, func() error { return l.update(ctx, i, o, s.NodeBytes) })
		})
	})
	// pod churn: each replacement is a pod's end and a new pod's life on the same node
	if s.ChurnPerNodeMinute > 0 {
		every(rctx, &sched, time.Minute, func() int { return max(1, int(float64(nodes())*s.ChurnPerNodeMinute)) }, func(_ int, due time.Time) {
			l.mu.Lock()
			node := l.rnd.Intn(len(l.nodes))
			ps := l.pods[node]
			var pod *object
			if len(ps) > 0 {
				k := l.rnd.Intn(len(ps))
				pod = ps[k]
				l.pods[node] = append(ps[:k:k], ps[k+1:]...)
			}
			l.mu.Unlock()
			if pod != nil {
				l.spawn(&reqs, "pod replacement", func() { l.replacePod(ctx, node, pod, due) })
			}
		})
	}
	// each API server's own traffic
	one := func() int { return len(l.clients) }
	every(rctx, &sched, s.OwnLeases, one, func(a int, due time.Time) {
		l.spawn(&reqs, "own leases", func() { l.ownLeases(ctx, a, due) })
	})
	every(rctx, &sched, s.ProgressRequests, one, func(a int, due time.Time) {
		l.spawn(&reqs, "progress request", func() {
			if err := l.clients[a].RequestProgress(l.watchCtx(a)); err != nil && ctx.Err() == nil {
				l.rec.fail("progress request", err)
			}
		})
	})
	if s.RevisionReads > 0 {
		every(rctx, &sched, time.Minute, func() int { return s.RevisionReads * len(l.clients) }, func(i int, due time.Time) {
			l.spawn(&reqs, "revision read", func() {
				l.timed(Read, "revision read", due, func() error { return l.read(ctx, i, fmt.Sprintf("/registry/resource-%02d", i%s.RevisionReads)) })
			})
		})
	}
	every(rctx, &sched, s.EventLeaseReuse, one, func(a int, due time.Time) {
		l.spawn(&reqs, "event lease", func() {
			l.timed(Mutating, "event lease", due, func() error { return l.grantEventLease(ctx, a) })
		})
	})
	every(rctx, &sched, s.CacheRefill, one, func(a int, due time.Time) {
		l.spawn(&reqs, "cache refill", func() { l.refill(ctx, a, due) })
	})
	sched.Wait()
	reqs.Wait()
	sums, sent, failed, errs := l.rec.take()
	return Result{Nodes: nodes(), Window: d, Classes: sums, Sent: sent, Failed: failed, Errors: errs}
}

// replacePod plays one pod's end and its replacement's life, request after request as the
// controllers and kubelet send them, each timed from when it is sent.
func (l *Load) replacePod(ctx context.Context, node int, pod *object, due time.Time) {
	s := l.s
	ns := pod.key[len("/registry/pods/"):]
	ns = ns[:len(l.namespace(0))]
	step := func(c Class, what string, req func() error) bool {
		ok := l.timed(c, what, due, req)
		due = time.Now()
		return ok
	}
	update := func(o *object) func() error { return func() error { return l.update(ctx, node, o, s.PodBytes) } }
	stopEvents, stopUpdates := s.EventsPerPod/3, s.PodUpdates/2
	l.mu.Lock()
	stale := l.rnd.Float64() < s.DeleteConflicts
	l.mu.Unlock()
	// the controller deletes it gracefully (a mark), the kubelet stops it and reports it, marks
	// it deleted now, and kube-apiserver deletes it after reading it
	for u := 0; u < stopUpdates; u++ {
		if !step(Mutating, "update "+pod.key, update(pod)) {
			return
		}
		if u == 0 {
			for e := 0; e < stopEvents; e++ {
				step(Mutating, "event", func() error { return l.event(ctx, node, ns, "pod") })
			}
		}
	}
	for r := 0; r < s.PodReads; r++ {
		step(Read, "get "+pod.key, func() error { return l.read(ctx, node, pod.key) })
	}
	if stale && !step(Mutating, "delete "+pod.key+" (stale)", func() error { return l.removeStale(ctx, node, pod) }) {
		return
	}
	if !step(Mutating, "delete "+pod.key, func() error { return l.remove(ctx, node, pod) }) {
		return
	}
	// its replacement: created, with its events, bound, reported pending then running
	next, ns, name := l.newPod(node)
	if !step(Mutating, "create "+next.key, func() error { return l.create(ctx, node, next, s.PodBytes*7/10) }) {
		return
	}
	for e := 0; e < s.EventsPerPod-stopEvents; e++ {
		step(Mutating, "event", func() error { return l.event(ctx, node, ns, name) })
	}
	for u := 0; u < s.PodUpdates-stopUpdates; u++ {
		if !step(Mutating, "update "+next.key, update(next)) {
			return
		}
	}
	l.mu.Lock()
	l.pods[node] = append(l.pods[node], next)
	l.mu.Unlock()
}

// removeStale is a delete whose Txn compares a revision older than the object's: it fails
// and reads the object back, as kube-apiserver's delete from a stale cached copy does.
func (l *Load) removeStale(ctx context.Context, api int, o *object) error {
	r, err := l.client(api).Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(o.key), "=", o.rev.Load()-1)).
		Then(clientv3.OpDelete(o.key)).Else(clientv3.OpGet(o.key)).Commit()
	if err != nil {
		return err
	}
	if r.Succeeded {
		return fmt.Errorf("delete %s at a stale revision succeeded", o.key)
	}
	return nil
}

// ownLeases is one round of an API server's own upkeep, every 10 s in the record: its identity
// lease updated; its master lease and its peer lease each read, then written with a fresh
// 15 s etcd lease; the master leases listed; the kubernetes service and its endpoints read.
func (l *Load) ownLeases(ctx context.Context, a int, due time.Time) {
	c := l.clients[a]
	ident := fmt.Sprintf("/registry/leases/kube-system/apiserver-%02d", a)
	l.timed(Mutating, "identity lease", due, func() error {
		_, err := c.Put(ctx, ident, l.value(720))
		return err
	})
	for _, key := range []string{fmt.Sprintf("/registry/masterleases/192.0.2.%d", a), fmt.Sprintf("/registry/peerserverleases/apiserver-%02d", a)} {
		l.timed(Read, "read "+key, time.Now(), func() error { return l.read(ctx, a, key) })
		l.timed(Mutating, "lease "+key, time.Now(), func() error {
			g, err := c.Grant(ctx, 15)
			if err != nil {
				return err
			}
			_, err = c.Put(ctx, key, l.value(100), clientv3.WithLease(g.ID))
			return err
		})
	}
	l.timed(Read, "list master leases", time.Now(), func() error { return l.list(ctx, a, "/registry/masterleases/") })
	for _, key := range []string{"/registry/endpointslices/default/kubernetes", "/registry/services/specs/default/kubernetes"} {
		l.timed(Read, "read "+key, time.Now(), func() error { return l.read(ctx, a, key) })
	}
}

// refill is one API server refilling its caches of the resources the load writes: pods (the
// LIST the SLO judges), nodes and node leases.
func (l *Load) refill(ctx context.Context, a int, due time.Time) {
	l.timed(List, "list pods", due, func() error { return l.list(ctx, a, "/registry/pods/") })
	for _, p := range []string{"/registry/minions/", "/registry/leases/"} {
		l.timed(Read, "list "+p, time.Now(), func() error { return l.list(ctx, a, p) })
	}
}

// list lists every key under prefix as kube-apiserver's watch cache fills: pages of
// Shape.ListPage at the first page's revision, each page one RangeStream where the member has
// it (kube-apiserver 1.37 with etcd 3.7), else one Range.
func (l *Load) list(ctx context.Context, a int, prefix string) error {
	c := l.clients[a]
	key, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	var rev int64
	for {
		kvs, more, at, err := l.page(ctx, c, &pb.RangeRequest{Key: []byte(key), RangeEnd: []byte(end), Limit: int64(l.s.ListPage), Revision: rev})
		if err != nil {
			return err
		}
		if rev == 0 {
			rev = at
		}
		if !more || len(kvs) == 0 {
			return nil
		}
		key = string(kvs[len(kvs)-1].Key) + "\x00"
	}
}

// page reads one page: by RangeStream (its chunks gathered) unless the member lacks it.
func (l *Load) page(ctx context.Context, c *clientv3.Client, r *pb.RangeRequest) (kvs []*mvccpb.KeyValue, more bool, rev int64, err error) {
	l.mu.Lock()
	noStream := l.noStream
	l.mu.Unlock()
	if !noStream {
		s, err := rangestream.Open(ctx, c.ActiveConnection(), r)
		for err == nil {
			var chunk *pb.RangeResponse
			if chunk, err = s.Recv(); err == nil {
				kvs = append(kvs, chunk.Kvs...)
				more = more || chunk.More
				if chunk.Header != nil {
					rev = chunk.Header.Revision
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return kvs, more, rev, nil
		}
		if status.Code(err) != codes.Unimplemented {
			return nil, false, 0, err
		}
		l.mu.Lock()
		l.noStream = true
		l.mu.Unlock()
	}
	opts := []clientv3.OpOption{clientv3.WithRange(string(r.RangeEnd)), clientv3.WithLimit(r.Limit)}
	if r.Revision > 0 {
		opts = append(opts, clientv3.WithRev(r.Revision))
	}
	resp, err := c.Get(ctx, string(r.Key), opts...)
	if err != nil {
		return nil, false, 0, err
	}
	return resp.Kvs, resp.More, resp.Header.Revision, nil
}
