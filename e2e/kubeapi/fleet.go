package kubeapi

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// FleetOptions sizes the cluster a Fleet plays.
type FleetOptions struct {
	Nodes       int
	PodsPerNode int // pods each node runs at any time
	// ChurnPerNodeMinute is pods replaced (deleted and created again) per node per minute.
	ChurnPerNodeMinute float64
	LeaseRenew         time.Duration // kubelet's node lease renewal (10 s)
	NodeStatus         time.Duration // kubelet's node status report
	// InformerRestart is how often a client lists all pods afresh, in pages of 500, as an
	// informer does when it (re)starts; 0 for never.
	InformerRestart time.Duration
	// NodeWatches opens, per node, the watch of its own pods a kubelet keeps (spec.nodeName).
	NodeWatches bool
	Namespace   string
	Seed        int64
}

// FleetStats counts what a Fleet sent and how much of it failed.
type FleetStats struct {
	Requests, Failed atomic.Int64
	mu               sync.Mutex
	firstErrors      []string
}

func (st *FleetStats) fail(format string, args ...any) {
	st.Failed.Add(1)
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.firstErrors) < 10 {
		st.firstErrors = append(st.firstErrors, fmt.Sprintf(format, args...))
	}
}

// Errors are the first failures.
func (st *FleetStats) Errors() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]string(nil), st.firstErrors...)
}

// Fleet plays a cluster's kubelets, scheduler and ReplicaSet controller against kube-apiserver.
type Fleet struct {
	s     *Server
	o     FleetOptions
	Stats FleetStats
	mu    sync.Mutex
	rnd   *rand.Rand
	seq   int
	pods  map[string][]*pod // running pods by node
}

type pod struct{ name, uid, app, node, ip string }

// NewFleet prepares a fleet; Setup creates its nodes and pods, Run keeps them busy.
func NewFleet(s *Server, o FleetOptions) *Fleet {
	return &Fleet{s: s, o: o, rnd: rand.New(rand.NewSource(o.Seed)), pods: map[string][]*pod{}}
}

func nodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

// send is one request whose failure is counted, not fatal: a cluster under load keeps going.
func (f *Fleet) send(ctx context.Context, method, path, ct string, body []byte, out any) bool {
	f.Stats.Requests.Add(1)
	code, b, err := f.s.Do(ctx, method, path, ct, body, out)
	if err != nil {
		if ctx.Err() == nil {
			f.Stats.fail("%s %s: %v", method, path, err)
		}
		return false
	}
	if code/100 != 2 {
		f.Stats.fail("%s %s: %d %s", method, path, code, truncate(b, 300))
		return false
	}
	return true
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

type meta struct {
	Metadata struct {
		UID             string `json:"uid"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// Setup creates the namespace, its default service account (the ServiceAccount admission
// needs it; kube-controller-manager would create it), every node with its lease, and the pods.
func (f *Fleet) Setup(ctx context.Context) error {
	ns := f.o.Namespace
	if code, b, err := f.s.Do(ctx, "POST", "/api/v1/namespaces", "", mustJSON(obj{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": ns}}), nil); err != nil || (code/100 != 2 && code != http.StatusConflict) {
		return fmt.Errorf("create namespace %s: %d %s %v", ns, code, truncate(b, 300), err)
	}
	sa := mustJSON(obj{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": obj{"name": "default", "namespace": ns}})
	if code, b, err := f.s.Do(ctx, "POST", "/api/v1/namespaces/"+ns+"/serviceaccounts", "", sa, nil); err != nil || (code/100 != 2 && code != http.StatusConflict) {
		return fmt.Errorf("create service account: %d %s %v", code, truncate(b, 300), err)
	}
	now := time.Now()
	err := parallel(ctx, f.o.Nodes, 8, func(i int) error {
		name := nodeName(i)
		var n meta
		if code, b, err := f.s.Do(ctx, "POST", "/api/v1/nodes", "", nodeObject(name, i, now), &n); err != nil || code/100 != 2 {
			return fmt.Errorf("create node %s: %d %s %v", name, code, truncate(b, 300), err)
		}
		if code, b, err := f.s.Do(ctx, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", "", leaseObject(name, n.Metadata.UID, now), nil); err != nil || code/100 != 2 {
			return fmt.Errorf("create lease %s: %d %s %v", name, code, truncate(b, 300), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return parallel(ctx, f.o.Nodes*f.o.PodsPerNode, 8, func(i int) error {
		f.startPod(ctx, nodeName(i%f.o.Nodes))
		return nil
	})
}

// parallel runs fn(0..n-1), at most width at once; the first error wins.
func parallel(ctx context.Context, n, width int, fn func(i int) error) error {
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	var first error
	var mu sync.Mutex
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// startPod plays a pod's start: the ReplicaSet controller creates it, the scheduler binds it
// and records "Scheduled", the kubelet reports it pending, then running, with its events.
func (f *Fleet) startPod(ctx context.Context, node string) {
	f.mu.Lock()
	f.seq++
	seq := f.seq
	f.mu.Unlock()
	app := fmt.Sprintf("app-%03d", seq%50)
	p := &pod{name: fmt.Sprintf("%s-5d8f7c9b6d-%06d", app, seq), app: app, node: node, ip: fmt.Sprintf("10.64.%d.%d", (seq/250)%256, 2+seq%250)}
	ns := f.o.Namespace
	base := "/api/v1/namespaces/" + ns + "/pods"
	var m meta
	if !f.send(ctx, "POST", base, "", podObject(ns, p.name, app), &m) {
		return
	}
	p.uid = m.Metadata.UID
	f.event(ctx, p, "SuccessfulCreate", "Created pod: "+p.name, "replicaset-controller")
	if !f.send(ctx, "POST", base+"/"+p.name+"/binding", "", bindingObject(p.name, node), nil) {
		return
	}
	f.event(ctx, p, "Scheduled", "Successfully assigned "+ns+"/"+p.name+" to "+node, "default-scheduler")
	f.send(ctx, "PATCH", base+"/"+p.name+"/status", "application/strategic-merge-patch+json", podStatusPatch(app, node, p.ip, "Pending", time.Now()), nil)
	f.event(ctx, p, "Pulled", "Container image already present on machine", "kubelet")
	f.event(ctx, p, "Created", "Created container: "+app, "kubelet")
	f.event(ctx, p, "Started", "Started container "+app, "kubelet")
	f.send(ctx, "PATCH", base+"/"+p.name+"/status", "application/strategic-merge-patch+json", podStatusPatch(app, node, p.ip, "Running", time.Now()), nil)
	f.mu.Lock()
	f.pods[node] = append(f.pods[node], p)
	f.mu.Unlock()
}

// stopPod plays a pod's end: the controller deletes it gracefully, the kubelet stops it,
// reports it and deletes it for good.
func (f *Fleet) stopPod(ctx context.Context, p *pod) {
	base := "/api/v1/namespaces/" + f.o.Namespace + "/pods/" + p.name
	f.event(ctx, p, "SuccessfulDelete", "Deleted pod: "+p.name, "replicaset-controller")
	if !f.send(ctx, "DELETE", base, "", deleteOptions(30, ""), nil) {
		return
	}
	f.event(ctx, p, "Killing", "Stopping container "+p.app, "kubelet")
	f.send(ctx, "PATCH", base+"/status", "application/strategic-merge-patch+json", podStatusPatch(p.app, p.node, p.ip, "Succeeded", time.Now()), nil)
	f.send(ctx, "DELETE", base, "", deleteOptions(0, p.uid), nil)
}

func (f *Fleet) event(ctx context.Context, p *pod, reason, msg, component string) {
	f.send(ctx, "POST", "/api/v1/namespaces/"+f.o.Namespace+"/events", "", eventObject(f.o.Namespace, p.name, p.uid, reason, msg, component, p.node, time.Now()), nil)
}

// Run keeps the fleet busy until ctx ends: every node renews its lease and reports its status
// on its own period (phases spread at random), pods are replaced at the churn rate, and
// informers restart.
func (f *Fleet) Run(ctx context.Context) {
	var wg sync.WaitGroup
	every := func(period time.Duration, fn func()) {
		if period <= 0 {
			return
		}
		f.mu.Lock()
		phase := time.Duration(f.rnd.Int63n(int64(period)))
		f.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(phase):
			}
			t := time.NewTicker(period)
			defer t.Stop()
			for {
				fn()
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	for i := 0; i < f.o.Nodes; i++ {
		name := nodeName(i)
		every(f.o.LeaseRenew, f.renewLease(ctx, name))
		every(f.o.NodeStatus, func() {
			f.send(ctx, "PATCH", "/api/v1/nodes/"+name+"/status", "application/strategic-merge-patch+json", nodeStatusPatch(time.Now()), nil)
		})
		if f.o.NodeWatches {
			wg.Add(1)
			go func() { defer wg.Done(); f.watchPods(ctx, name) }()
		}
	}
	if f.o.ChurnPerNodeMinute > 0 {
		every(time.Duration(float64(time.Minute)/(f.o.ChurnPerNodeMinute*float64(f.o.Nodes))), func() {
			if p := f.takePod(); p != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					f.stopPod(ctx, p)
					f.startPod(ctx, p.node)
				}()
			}
		})
	}
	every(f.o.InformerRestart, func() { f.listPods(ctx) })
	wg.Wait()
}

// renewLease returns a kubelet's renewal: an update of its lease object from the copy it holds
// (no read first), as the node lease controller does; a conflict makes it read the lease again.
func (f *Fleet) renewLease(ctx context.Context, node string) func() {
	path := "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + node
	var held map[string]any
	return func() {
		if held == nil && !f.send(ctx, "GET", path, "", nil, &held) {
			return
		}
		spec, _ := held["spec"].(map[string]any)
		if spec == nil {
			held = nil
			return
		}
		spec["renewTime"] = microTime(time.Now())
		var next map[string]any
		if !f.send(ctx, "PUT", path, "", mustJSON(held), &next) {
			held = nil
			return
		}
		held = next
	}
}

func (f *Fleet) takePod() *pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	node := nodeName(f.rnd.Intn(f.o.Nodes))
	ps := f.pods[node]
	if len(ps) == 0 {
		return nil
	}
	i := f.rnd.Intn(len(ps))
	p := ps[i]
	f.pods[node] = append(ps[:i:i], ps[i+1:]...)
	return p
}

// listPods lists every pod in pages of 500, as an informer's reflector does when it starts.
func (f *Fleet) listPods(ctx context.Context) {
	cont := ""
	for {
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
		}
		path := "/api/v1/pods?limit=500"
		if cont != "" {
			path += "&continue=" + cont
		}
		if !f.send(ctx, "GET", path, "", nil, &page) || page.Metadata.Continue == "" {
			return
		}
		cont = page.Metadata.Continue
	}
}

// watchPods keeps a kubelet's watch of the pods bound to its node, reading and dropping what
// it gets, and opens it again when it ends.
func (f *Fleet) watchPods(ctx context.Context, node string) {
	for ctx.Err() == nil {
		body, err := f.s.Stream(ctx, "/api/v1/pods?watch=1&allowWatchBookmarks=true&fieldSelector=spec.nodeName%3D"+node)
		if err != nil {
			if ctx.Err() == nil {
				f.Stats.fail("watch pods of %s: %v", node, err)
				time.Sleep(time.Second)
			}
			continue
		}
		io.Copy(io.Discard, body)
		body.Close()
	}
}
