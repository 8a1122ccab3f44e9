package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"etcdx/upgradelab/cluster"
)

// Binary returns the path of a built binary: from E2E_BIN_DIR when set (make e2e), otherwise
// built once into a temporary directory from this workspace.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if dir := os.Getenv("E2E_BIN_DIR"); dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("E2E_BIN_DIR is set but %s is missing: %v", p, err)
		}
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		// The layout make build leaves: each level's server, and the older levels' CLIs under levels/.
		type target struct{ path, pkg, level string }
		targets := []target{{"etcdutl", "etcdx/etcdutl", CurrentLevel}, {"etcdctl", "etcdx/etcdctl", CurrentLevel},
			{"discovery", "etcdx/discovery/cmd/discovery", CurrentLevel}, {"upgradelab", "etcdx/upgradelab/cmd/upgradelab", CurrentLevel}}
		for level, name := range levelBinaries {
			targets = append(targets, target{name, "etcdx/server", level})
			if level != CurrentLevel {
				for _, tool := range []string{"etcdctl", "etcdutl"} {
					targets = append(targets, target{filepath.Join("levels", level, tool), "etcdx/" + tool, level})
				}
			}
		}
		for _, tg := range targets {
			out, err := exec.Command("go", "build", "-o", filepath.Join(dir, tg.path), "-ldflags", "-X etcdx/pkg/buildinfo.Level="+tg.level, tg.pkg).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", tg.path, err, out)
				return
			}
		}
		builtDir = dir
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(builtDir, name)
}

var (
	buildOnce sync.Once
	buildErr  error
	builtDir  string
)

// FreePort returns a loopback port below the ephemeral range that is free now and has not been
// handed out before in this test run.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Member is one etcd process of a test: the shared harness's member (etcdx/upgradelab/cluster),
// with failures reported to the test.
type Member struct {
	*cluster.Member
	t testing.TB
}

// NewMember prepares (does not start) a single-member cluster in a fresh data dir.
func NewMember(t testing.TB, extra ...string) *Member {
	t.Helper()
	dir := t.TempDir()
	// bcrypt's cheapest cost (upstream's flag, on both implementations): every password a test
	// sets would otherwise cost a tenth of a second to check at each login, minutes over the
	// suite, and the cost changes nothing a test looks at. A test's own flag comes later and wins.
	extra = append([]string{"--bcrypt-cost", "4"}, extra...)
	m := &Member{t: t, Member: &cluster.Member{Name: "m1", DataDir: filepath.Join(dir, "data"), Extra: extra, Bin: Binary(t, "etcd"),
		ClientURL:  fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
		PeerURL:    fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
	}}
	t.Cleanup(func() {
		// A failed test shows what its members said last: a flake in CI leaves nothing else.
		if t.Failed() {
			if tail := m.LogTail(15); tail != "" {
				t.Logf("%s (%s), last log lines:\n%s", m.Name, m.Bin, tail)
			}
		}
		m.Kill()
	})
	return m
}

// Cluster is a set of members bootstrapped together.
type Cluster struct {
	t       testing.TB
	Members []*Member
	// healthy is when Start saw every member healthy: the peers are connected by then (a
	// member's own start only begins dialling them).
	healthy time.Time
}

// peerHealthInterval is how long a peer must have been connected before a member counts it
// for a membership change (upstream's health interval, 5 s), with a margin for a loaded machine.
const peerHealthInterval = 6500 * time.Millisecond

// WaitPeersSettled waits until the members' peers count as connected for membership changes,
// as a freshly started cluster's do not (both implementations refuse an add as unhealthy).
func (c *Cluster) WaitPeersSettled() {
	time.Sleep(time.Until(c.healthy.Add(peerHealthInterval)))
}

// NewCluster prepares n members (m1..mn) that bootstrap one cluster; Start starts them.
func NewCluster(t testing.TB, n int, extra ...string) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var ic []string
	for i := 1; i <= n; i++ {
		m := NewMember(t, extra...)
		m.Name = fmt.Sprintf("m%d", i)
		c.Members = append(c.Members, m)
		ic = append(ic, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		m.InitialCluster = strings.Join(ic, ",")
	}
	return c
}

// Start launches every member, then waits until each is healthy (a member alone has no quorum).
func (c *Cluster) Start() {
	c.t.Helper()
	for _, m := range c.Members {
		if err := m.StartNoWait(); err != nil {
			c.t.Fatal(err)
		}
	}
	for _, m := range c.Members {
		if err := m.WaitHealthy(30 * time.Second); err != nil {
			c.t.Fatalf("member %s did not become healthy: %v\n--- log tail ---\n%s", m.Name, err, m.LogTail(40))
		}
	}
	c.healthy = time.Now()
}

// UseTLS switches every member to https client and peer URLs with certificate authentication
// on both, using certs.
func (c *Cluster) UseTLS(certs Certs) {
	var ic []string
	for _, m := range c.Members {
		m.ClientURL = strings.Replace(m.ClientURL, "http://", "https://", 1)
		m.PeerURL = strings.Replace(m.PeerURL, "http://", "https://", 1)
		m.Extra = append(m.Extra, "--cert-file", certs.ServerCert, "--key-file", certs.ServerKey,
			"--trusted-ca-file", certs.CA, "--client-cert-auth",
			"--peer-cert-file", certs.ServerCert, "--peer-key-file", certs.ServerKey,
			"--peer-trusted-ca-file", certs.CA, "--peer-client-cert-auth")
		m.TLS = certs.ClientTLS(c.t, true)
		ic = append(ic, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		m.InitialCluster = strings.Join(ic, ",")
	}
}

// Endpoints are every member's client URL.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Client talks to every member.
func (c *Cluster) Client() *clientv3.Client {
	c.t.Helper()
	cl, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: c.Members[0].TLS})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// Leader returns the member that the majority reports as leader, waiting up to timeout.
func (c *Cluster) Leader(timeout time.Duration) *Member {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		votes := map[uint64]int{}
		ids := map[uint64]*Member{}
		alive := 0
		for _, m := range c.Members {
			if !m.Running() {
				continue
			}
			alive++
			cl := m.Client()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := cl.Status(ctx, m.ClientURL)
			cancel()
			cl.Close()
			if err != nil {
				continue
			}
			ids[st.Header.MemberId] = m
			if st.Leader != 0 {
				votes[st.Leader]++
			}
		}
		for id, n := range votes {
			if n*2 > alive && ids[id] != nil {
				return ids[id]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("no agreed leader within %v", timeout)
	return nil
}

// Start launches the process and waits until /health says the member serves.
func (m *Member) Start() {
	m.t.Helper()
	if err := m.StartNoWait(); err != nil {
		m.t.Fatal(err)
	}
	if err := m.WaitHealthy(20 * time.Second); err != nil {
		m.t.Fatalf("member %s did not become healthy: %v\n--- log tail ---\n%s", m.Name, err, m.LogTail(40))
	}
}

// StartNoWait launches the process.
func (m *Member) StartNoWait() error { return m.Member.Start() }

// WaitHealthy polls /health until it answers 200.
func (m *Member) WaitHealthy(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return m.Member.WaitHealthy(ctx)
}

// Stop sends SIGTERM and waits for a clean exit.
// Stop stops the member with SIGTERM; ending by that signal, as upstream's etcd and ours do
// after their clean-up, is a clean stop.
func (m *Member) Stop() error {
	if err := m.Member.Stop(20 * time.Second); err != nil {
		return err
	}
	if err := m.ExitErr(); err != nil && !endedBy(err, syscall.SIGTERM) {
		return err
	}
	return nil
}

// endedBy says whether a process ended by sig.
func endedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// Client returns a clientv3 client for the member, closed at test end.
func (m *Member) Client() *clientv3.Client {
	m.t.Helper()
	c, err := m.NewClient()
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { c.Close() })
	return c
}

// Ctx is a bounded context for one test step.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// healthClient bounds the tests' plain HTTP requests: a member without quorum accepts
// connections but does not answer them yet.
var healthClient = &http.Client{Timeout: 2 * time.Second}
