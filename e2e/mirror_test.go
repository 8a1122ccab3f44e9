package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestEtcdctlMakeMirror copies a prefix from one cluster to another under a new prefix, then
// follows puts and deletes; its argument errors are upstream's. It runs with upstream's
// etcdctl too.
func TestEtcdctlMakeMirror(t *testing.T) {
	for _, bin := range []string{Binary(t, "etcdctl"), UpstreamBinary(t, "etcdctl")} {
		src, dst := NewMember(t), NewMember(t)
		src.Start()
		dst.Start()
		sc, dc := src.Client(), dst.Client()
		for i := 0; i < 20; i++ {
			if _, err := sc.Put(Ctx(t), fmt.Sprintf("src/%02d", i), "v"); err != nil {
				t.Fatal(err)
			}
		}
		sc.Put(Ctx(t), "other", "not mirrored")
		p := StartCtl(t, bin, nil, "--endpoints", src.ClientURL, "make-mirror", "--prefix", "src/", "--dest-prefix", "dst/", dst.ClientURL)
		waitCount := func(want int64) {
			t.Helper()
			for i := 0; ; i++ {
				r, err := dc.Get(Ctx(t), "dst/", clientv3.WithPrefix(), clientv3.WithCountOnly())
				if err == nil && r.Count == want {
					return
				}
				if i == 100 {
					t.Fatalf("%s: destination has %v keys under dst/, want %d\n%s", bin, r, want, p.Output())
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		waitCount(20)
		sc.Put(Ctx(t), "src/new", "v2")
		sc.Delete(Ctx(t), "src/00")
		for i := 0; ; i++ { // both changes reach the destination
			n, err1 := dc.Get(Ctx(t), "dst/new")
			d, err2 := dc.Get(Ctx(t), "dst/00")
			if err1 == nil && err2 == nil && len(n.Kvs) == 1 && string(n.Kvs[0].Value) == "v2" && len(d.Kvs) == 0 {
				break
			}
			if i == 100 {
				t.Fatalf("%s: changes after the copy were not mirrored: %+v %+v\n%s", bin, n, d, p.Output())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if r, _ := dc.Get(Ctx(t), "other"); len(r.Kvs) != 0 {
			t.Fatalf("%s: a key outside --prefix was mirrored", bin)
		}
		p.Signal(syscall.SIGINT)
		p.Wait(5 * time.Second)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"make-mirror"}, "make-mirror takes one destination argument"},
		{[]string{"make-mirror", "--dest-prefix", "a", "--no-dest-prefix", "127.0.0.1:1"}, "cannot be set at the same time"},
	} {
		code, out := ctl(t, Binary(t, "etcdctl"), "", c.args...)
		ucode, _ := ctl(t, UpstreamBinary(t, "etcdctl"), "", c.args...)
		if code != 128 || ucode != code || !strings.Contains(out, c.want) {
			t.Errorf("etcdctl %v: exit %d (upstream %d), %q", c.args, code, ucode, out)
		}
	}
}

// TestEtcdctlCheckDatascale runs upstream's small datascale check: it reports the memory the
// member took for 10,000 key-values and removes them.
func TestEtcdctlCheckDatascale(t *testing.T) {
	m := NewMember(t)
	m.Start()
	code, out := ctl(t, Binary(t, "etcdctl"), "", "--endpoints", m.ClientURL, "check", "datascale", "--auto-compact", "--auto-defrag")
	if code != 0 || !strings.Contains(out, "Start data scale check for work load [10000 key-value pairs, 1024 bytes per key-value, 50 concurrent clients].") ||
		!strings.Contains(out, "PASS: Approximate system memory used : ") {
		t.Fatalf("check datascale: exit %d\n%s", code, out)
	}
	if r, err := m.Client().Get(Ctx(t), "/etcdctl-check-datascale/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || r.Count != 0 {
		t.Fatalf("keys left behind: %v %v", r, err)
	}
	if code, out := ctl(t, Binary(t, "etcdctl"), "", "--endpoints", m.ClientURL, "check", "datascale", "--load", "huge"); code != 4 || !strings.Contains(out, "unknown load option huge") {
		t.Fatalf("unknown load: exit %d %s", code, out)
	}
}
