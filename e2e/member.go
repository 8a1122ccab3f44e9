package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
		for name, pkg := range map[string]string{"etcd": "etcdx/server", "etcdutl": "etcdx/etcdutl", "etcdctl": "etcdx/etcdctl", "etcd-last-release": "etcdx/server", "discovery": "etcdx/discovery/cmd/discovery", "upgradelab": "etcdx/upgradelab/cmd/upgradelab"} {
			args := []string{"build", "-o", filepath.Join(dir, name)}
			if name == "etcd-last-release" {
				args = append(args, "-ldflags", "-X etcdx/server/version.Version="+LastReleaseVersion)
			}
			out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", name, err, out)
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

// Test ports come from below the kernel's ephemeral range (32768 and up here), so outgoing
// connections, which take ephemeral ports, cannot grab one between allocation and use.
const (
	portLow  = 20000
	portHigh = 32000
)

var nextPort atomic.Int64

// FreePort returns a loopback port below the ephemeral range that is free now and has not been
// handed out before in this test run.
func FreePort(t testing.TB) int {
	t.Helper()
	nextPort.CompareAndSwap(0, int64(portLow+rand.IntN(2000)))
	for i := 0; i < portHigh-portLow; i++ {
		p := int(nextPort.Add(1))
		if p >= portHigh {
			nextPort.Store(portLow)
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

// Member is one etcd process.
type Member struct {
	t          testing.TB
	Name       string
	DataDir    string
	ClientURL  string
	PeerURL    string
	MetricsURL string
	Extra      []string // additional flags
	Env        []string
	Bin        string
	// InitialCluster overrides the single-member default (set by NewCluster).
	InitialCluster string
	// Discovery, when set, replaces --initial-cluster (v3 discovery flags).
	Discovery []string
	// TLS is how the test talks to an https member.
	TLS *tls.Config

	cmd    *exec.Cmd
	log    *os.File
	logBuf *bytes.Buffer
	exited chan struct{}
	err    error
}

// NewMember prepares (does not start) a single-member cluster in a fresh data dir.
func NewMember(t testing.TB, extra ...string) *Member {
	t.Helper()
	dir := t.TempDir()
	m := &Member{t: t, Name: "m1", DataDir: filepath.Join(dir, "data"), Extra: extra, Bin: Binary(t, "etcd"),
		ClientURL:  fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
		PeerURL:    fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
	}
	t.Cleanup(func() { m.Kill() })
	return m
}

// Args are the flags the member starts with.
func (m *Member) Args() []string {
	ic := m.InitialCluster
	if ic == "" {
		ic = m.Name + "=" + m.PeerURL
	}
	bootstrap := []string{"--initial-cluster", ic}
	if m.Discovery != nil {
		bootstrap = m.Discovery
	}
	args := []string{"--name", m.Name, "--data-dir", m.DataDir,
		"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL}
	args = append(args, bootstrap...)
	args = append(args, "--listen-metrics-urls", m.MetricsURL, "--log-level", "info")
	return append(args, m.Extra...)
}

// Cluster is a set of members bootstrapped together.
type Cluster struct {
	t       testing.TB
	Members []*Member
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
			select {
			case <-m.exited:
				continue
			default:
			}
			if m.exited == nil {
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
func (m *Member) StartNoWait() error {
	f, err := os.OpenFile(filepath.Join(filepath.Dir(m.DataDir), m.Name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	m.log = f
	m.cmd = exec.Command(m.Bin, m.Args()...)
	m.cmd.Stdout = f
	m.cmd.Stderr = f
	m.cmd.Env = append(os.Environ(), m.Env...)
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.Bin, err)
	}
	m.exited = make(chan struct{})
	go func() {
		m.err = m.cmd.Wait()
		close(m.exited)
	}()
	return nil
}

// healthClient bounds each probe: a member without quorum accepts connections but does not
// serve them yet.
var healthClient = &http.Client{Timeout: 2 * time.Second}

// WaitHealthy polls /health until it answers 200.
func (m *Member) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-m.exited:
			return fmt.Errorf("process exited: %v", m.err)
		default:
		}
		hc := healthClient
		if m.TLS != nil {
			hc = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: m.TLS}}
		}
		resp, err := hc.Get(m.ClientURL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = fmt.Errorf("/health: %s", resp.Status)
		} else {
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("timed out: %v", last)
}

// Stop sends SIGTERM and waits for a clean exit.
func (m *Member) Stop() error {
	if m.cmd == nil || m.exited == nil {
		return nil
	}
	select {
	case <-m.exited:
		return m.err
	default:
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
		return m.err
	case <-time.After(20 * time.Second):
		m.cmd.Process.Kill()
		<-m.exited
		return fmt.Errorf("member %s did not stop within 20s of SIGTERM", m.Name)
	}
}

// Kill sends SIGKILL (a crash) and waits.
func (m *Member) Kill() {
	if m.cmd == nil || m.exited == nil {
		return
	}
	select {
	case <-m.exited:
		return
	default:
	}
	m.cmd.Process.Kill()
	<-m.exited
}

// Wait waits for the process to exit by itself and returns its exit code.
func (m *Member) Wait(timeout time.Duration) (int, error) {
	select {
	case <-m.exited:
		if m.cmd.ProcessState == nil {
			return -1, m.err
		}
		return m.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		return -1, fmt.Errorf("still running after %v", timeout)
	}
}

// LogTail returns the last n lines of the member's log.
func (m *Member) LogTail(n int) string {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(m.DataDir), m.Name+".log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Log returns the whole log.
func (m *Member) Log() string {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(m.DataDir), m.Name+".log"))
	return string(b)
}

// Client returns a clientv3 client for the member, closed at test end.
func (m *Member) Client() *clientv3.Client {
	m.t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: m.TLS})
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
