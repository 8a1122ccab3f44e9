package e2e

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/e2e/kubeload"
)

// TestKubernetesShapedLoadRuns plays a small Kubernetes cluster (20 nodes, 5 pods each, fast
// churn) against three of our members for one window: every class of request is sent and
// timed, nothing fails, the SLOs hold at that size, and what the load wrote is in the keyspace
// (nodes, leases, pods; the watches saw the writes).
func TestKubernetesShapedLoadRuns(t *testing.T) {
	c := NewCluster(t, 3, "--watch-progress-notify-interval=5s")
	c.Start()
	s := kubeload.Defaults(0)
	s.PodsPerNode, s.ChurnPerNodeMinute, s.CacheRefill = 5, 6, 5*time.Second
	ctx := Ctx(t)
	l, err := kubeload.New(ctx, c.Endpoints(), s)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Populate(ctx, 20); err != nil {
		t.Fatal(err)
	}
	res := l.Run(ctx, 12*time.Second)
	for cl, sum := range res.Classes {
		if sum.Count == 0 {
			t.Errorf("no %s timed in the window: %+v", kubeload.Class(cl), res)
		}
	}
	if ok, why := res.Holds(kubeload.KubernetesSLO); !ok {
		t.Errorf("20 nodes miss the SLOs on three members: %s", why)
	}
	cl := c.Client()
	count := func(prefix string) int64 {
		r, err := cl.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return r.Count
	}
	if n := count("/registry/minions/"); n != 20 {
		t.Errorf("%d nodes, want 20", n)
	}
	if n := count("/registry/leases/kube-node-lease/"); n != 20 {
		t.Errorf("%d node leases, want 20", n)
	}
	// pods are replaced one for one: a replacement in flight at the window's end may be half done
	if n := count("/registry/pods/"); n < 95 || n > 100 {
		t.Errorf("%d pods, want about 100", n)
	}
	if n := count("/registry/events/"); n == 0 {
		t.Error("no events written")
	}
	// Stacked, as kubeadm's control plane: each API server's watches are on its own member.
	for i, m := range c.Members {
		if n := metricValue(t, m, "etcd_debugging_mvcc_watcher_total"); n != float64(s.WatchedResources) {
			t.Errorf("member %d serves %v watchers, want one API server's %d", i, n, s.WatchedResources)
		}
	}
}
