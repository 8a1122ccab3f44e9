// Package cluster runs an etcd cluster as local processes on loopback ports: members can be
// stopped, killed and started again with another binary, which is all a version plan needs.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Member is one etcd process and its data.
type Member struct {
	Name      string
	Dir       string
	ClientURL string
	PeerURL   string
	// Bin is the binary the member runs (or last ran); Level is its major.minor.
	Bin   string
	Level string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Cluster is the members of one run.
type Cluster struct {
	Members []*Member
	Token   string
}

// New prepares n members m1..mN under dir on free loopback ports.
func New(dir string, n int, token string) (*Cluster, error) {
	c := &Cluster{Token: token}
	for i := 1; i <= n; i++ {
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("m%d", i)
		c.Members = append(c.Members, &Member{Name: name, Dir: filepath.Join(dir, name),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", cp), PeerURL: fmt.Sprintf("http://127.0.0.1:%d", pp)})
	}
	return c, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Member returns the member called name, or nil.
func (c *Cluster) Member(name string) *Member {
	for _, m := range c.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Endpoints are the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

func (c *Cluster) initialCluster() string {
	var parts []string
	for _, m := range c.Members {
		parts = append(parts, m.Name+"="+m.PeerURL)
	}
	return strings.Join(parts, ",")
}

// Start launches member m with bin (the first start bootstraps the cluster).
func (c *Cluster) Start(m *Member, bin, level string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		select {
		case <-m.exited:
		default:
			return fmt.Errorf("member %s is already running", m.Name)
		}
	}
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(m.Dir, "etcd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s: starting %s (%s)\n", time.Now().Format(time.RFC3339Nano), bin, level)
	cmd := exec.Command(bin, "--name", m.Name, "--data-dir", filepath.Join(m.Dir, "data"),
		"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", c.initialCluster(), "--initial-cluster-token", c.Token,
		"--initial-cluster-state", "new", "--log-level", "info")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", m.Name, err)
	}
	m.cmd, m.Bin, m.Level = cmd, bin, level
	exited := make(chan struct{})
	m.exited = exited
	go func() {
		cmd.Wait()
		f.Close()
		close(exited)
	}()
	return nil
}

// Running reports whether the member's process is alive.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits (SIGKILL after timeout).
func (m *Member) Stop(timeout time.Duration) error {
	return m.signal(syscall.SIGTERM, timeout)
}

// Kill sends SIGKILL: a crash.
func (m *Member) Kill() error { return m.signal(syscall.SIGKILL, 10*time.Second) }

func (m *Member) signal(sig syscall.Signal, timeout time.Duration) error {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		return nil
	default:
	}
	cmd.Process.Signal(sig)
	select {
	case <-exited:
		return nil
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("member %s did not exit within %v of %v; killed", m.Name, timeout, sig)
	}
}

// Log returns the member's log (all its runs).
func (m *Member) Log() string {
	b, _ := os.ReadFile(filepath.Join(m.Dir, "etcd.log"))
	return string(b)
}

// Versions is a member's GET /version.
type Versions struct {
	Server  string `json:"etcdserver"`
	Cluster string `json:"etcdcluster"`
	Storage string `json:"storage"`
}

var httpClient = &http.Client{Timeout: 2 * time.Second}

// Versions asks the member for its versions.
func (m *Member) Versions(ctx context.Context) (Versions, error) {
	var v Versions
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL+"/version", nil)
	if err != nil {
		return v, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("%s/version: %s", m.ClientURL, resp.Status)
	}
	return v, json.NewDecoder(resp.Body).Decode(&v)
}

// WaitHealthy waits until the member answers /health with 200.
func (m *Member) WaitHealthy(ctx context.Context) error {
	var last error
	for {
		if !m.Running() {
			return fmt.Errorf("member %s exited; log tail:\n%s", m.Name, tail(m.Log(), 15))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL+"/health", nil)
		resp, err := httpClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/health: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("member %s not healthy: %w (last: %v)", m.Name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Client connects to every member.
func (c *Cluster) Client() (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connect to %v: %w", c.Endpoints(), err)
	}
	return cli, nil
}

// StopAll stops every member (for the end of a run).
func (c *Cluster) StopAll() error {
	var errs []error
	for _, m := range c.Members {
		errs = append(errs, m.Stop(20*time.Second))
	}
	return errors.Join(errs...)
}
