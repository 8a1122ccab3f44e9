package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
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

// Member is one etcd process of any binary: the flags it starts with, its data directory and
// log, and the process once started. It can be stopped, killed and started again, with the same
// or another binary.
type Member struct {
	Name       string
	DataDir    string
	ClientURL  string
	PeerURL    string
	MetricsURL string // --listen-metrics-urls, when set
	// ListenClientURL and ListenPeerURL, when set, are what the member listens on (e.g.
	// 0.0.0.0 in a container); the advertised URLs are ClientURL and PeerURL.
	ListenClientURL string
	ListenPeerURL   string
	// Bin is the binary the member runs (or last ran); Level is its major.minor when known.
	Bin   string
	Level string

	// InitialCluster is --initial-cluster (default: this member alone); Discovery, when set,
	// replaces it with v3 discovery flags. Token and State are --initial-cluster-token and
	// --initial-cluster-state when set.
	InitialCluster string
	Discovery      []string
	Token          string
	State          string
	LogLevel       string // default "info"
	Extra          []string
	Env            []string
	// Flags, when set, is the whole command line instead of the one the fields above build
	// (e.g. --config-file).
	Flags []string
	// TLS is how the harness talks to an https member.
	TLS *tls.Config
	// WorkDir is the process's working directory (relative unix:// socket names live there);
	// empty: the caller's.
	WorkDir string
	// LogPath receives the process's output, appended across runs (default: <name>.log beside
	// the data directory).
	LogPath string
	// Netns, when set, is the network namespace the process runs in (through `ip netns exec`,
	// which execs the binary, so the pid is the member's).
	Netns string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Args are the flags the member starts with.
func (m *Member) Args() []string {
	if m.Flags != nil {
		return m.Flags
	}
	ic := m.InitialCluster
	if ic == "" {
		ic = m.Name + "=" + m.PeerURL
	}
	args := []string{"--name", m.Name, "--data-dir", m.DataDir,
		"--listen-client-urls", or(m.ListenClientURL, m.ClientURL), "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", or(m.ListenPeerURL, m.PeerURL), "--initial-advertise-peer-urls", m.PeerURL}
	if m.Discovery != nil {
		args = append(args, m.Discovery...)
	} else {
		args = append(args, "--initial-cluster", ic)
	}
	if m.Token != "" {
		args = append(args, "--initial-cluster-token", m.Token)
	}
	if m.State != "" {
		args = append(args, "--initial-cluster-state", m.State)
	}
	if m.MetricsURL != "" {
		args = append(args, "--listen-metrics-urls", m.MetricsURL)
	}
	level := m.LogLevel
	if level == "" {
		level = "info"
	}
	args = append(args, "--log-level", level)
	return append(args, m.Extra...)
}

func or(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

func (m *Member) logPath() string {
	if m.LogPath != "" {
		return m.LogPath
	}
	return filepath.Join(filepath.Dir(m.DataDir), m.Name+".log")
}

// Start launches the process with Bin; it does not wait for the member to serve.
func (m *Member) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exited != nil {
		select {
		case <-m.exited:
		default:
			return fmt.Errorf("member %s is already running", m.Name)
		}
	}
	if err := os.MkdirAll(filepath.Dir(m.logPath()), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(m.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(m.Bin, m.Args()...)
	if m.Netns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", m.Netns, m.Bin}, m.Args()...)...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), m.Env...)
	cmd.Dir = m.WorkDir
	// The member dies with the harness: a killed lab or test leaves no etcd behind.
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", m.Bin, err)
	}
	exited := make(chan struct{})
	m.cmd, m.exited, m.err = cmd, exited, nil
	go func() {
		err := cmd.Wait()
		f.Close()
		m.mu.Lock()
		m.err = err
		m.mu.Unlock()
		close(exited)
	}()
	return nil
}

// StartAs records which binary (and level) the member runs from now on, notes it in the log, and
// starts it.
func (m *Member) StartAs(bin, level string) error {
	m.Bin, m.Level = bin, level
	if err := os.MkdirAll(filepath.Dir(m.logPath()), 0o755); err != nil {
		return err
	}
	if f, err := os.OpenFile(m.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintf(f, "=== %s: starting %s (%s)\n", time.Now().Format(time.RFC3339Nano), bin, level)
		f.Close()
	}
	return m.Start()
}

// Exited is closed when the process last started has exited (nil before the first start).
func (m *Member) Exited() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exited
}

// Pid is the process ID of the member last started (0 before the first start).
func (m *Member) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Running reports whether the member's process is alive.
func (m *Member) Running() bool {
	ex := m.Exited()
	if ex == nil {
		return false
	}
	select {
	case <-ex:
		return false
	default:
		return true
	}
}

// ExitErr is how the last process ended (nil for a clean exit, or while it runs).
func (m *Member) ExitErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Stop sends SIGTERM and waits for the process to exit (how it ended is ExitErr: an upstream
// binary ends by the signal itself); after timeout it is killed and an error says so.
func (m *Member) Stop(timeout time.Duration) error {
	ex := m.Exited()
	if ex == nil {
		return nil
	}
	select {
	case <-ex:
		return nil
	default:
	}
	m.Signal(syscall.SIGCONT) // a frozen member cannot act on SIGTERM
	m.Signal(syscall.SIGTERM)
	select {
	case <-ex:
		return nil
	case <-time.After(timeout):
		m.Signal(syscall.SIGKILL)
		<-ex
		return fmt.Errorf("member %s did not stop within %v of SIGTERM", m.Name, timeout)
	}
}

// Kill sends SIGKILL (a crash) and waits for the process to go.
func (m *Member) Kill() {
	ex := m.Exited()
	if ex == nil {
		return
	}
	m.Signal(syscall.SIGKILL)
	<-ex
}

// Signal sends sig to the running process (SIGSTOP and SIGCONT freeze and thaw it).
func (m *Member) Signal(sig syscall.Signal) {
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		cmd.Process.Signal(sig)
	}
}

// Wait waits up to timeout for the process to exit by itself and returns its exit code.
func (m *Member) Wait(timeout time.Duration) (int, error) {
	ex := m.Exited()
	if ex == nil {
		return -1, fmt.Errorf("member %s was never started", m.Name)
	}
	select {
	case <-ex:
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.cmd.ProcessState == nil {
			return -1, m.err
		}
		return m.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		return -1, fmt.Errorf("still running after %v", timeout)
	}
}

// httpClient bounds each probe: a member without quorum accepts connections but does not
// answer yet.
func (m *Member) httpClient() *http.Client {
	if m.TLS == nil {
		return PlainHTTP
	}
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: m.TLS}}
}

// WaitHealthy polls /health until it answers 200, the process exits or ctx ends.
func (m *Member) WaitHealthy(ctx context.Context) error {
	base := m.ClientURL
	if strings.HasPrefix(base, "unix") && m.MetricsURL != "" {
		base = m.MetricsURL // the plain HTTP client cannot dial a socket
	}
	return WaitHealthy(ctx, m.httpClient(), base, func() error {
		if ex := m.Exited(); ex != nil {
			select {
			case <-ex:
				return fmt.Errorf("process exited: %v", m.ExitErr())
			default:
			}
		}
		return nil
	})
}

// WaitHealthy polls base/health with hc until it answers 200, gone reports an error (the
// member's process ended) or ctx ends.
func WaitHealthy(ctx context.Context, hc *http.Client, base string, gone func() error) error {
	var last error
	for {
		if err := gone(); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
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
			return fmt.Errorf("timed out: %v", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Versions is a member's GET /version.
type Versions struct {
	Server  string `json:"etcdserver"`
	Cluster string `json:"etcdcluster"`
	Storage string `json:"storage"`
}

// Versions asks the member for its versions.
func (m *Member) Versions(ctx context.Context) (Versions, error) {
	return GetVersions(ctx, m.httpClient(), m.ClientURL)
}

// GetVersions asks base/version with hc.
func GetVersions(ctx context.Context, hc *http.Client, base string) (Versions, error) {
	var v Versions
	body, err := getOK(ctx, hc, base+"/version")
	if err != nil {
		return v, err
	}
	defer body.Close()
	return v, json.NewDecoder(body).Decode(&v)
}

// getOK is a GET of url whose answer must be 200 OK: its body, for the caller to close.
func getOK(ctx context.Context, hc *http.Client, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// PlainHTTP is the probe client for plain-HTTP members: each probe is bounded, since a member
// without quorum accepts connections but does not answer yet.
var PlainHTTP = &http.Client{Timeout: 2 * time.Second}

// Log returns the member's log (all its runs).
func (m *Member) Log() string {
	b, _ := os.ReadFile(m.logPath())
	return string(b)
}

// LogTail returns the last n lines of the member's log.
func (m *Member) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(m.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogHas reports whether the member's log contains s.
func (m *Member) LogHas(s string) bool { return strings.Contains(m.Log(), s) }

// NewClient connects a client to this member alone.
func (m *Member) NewClient() (*clientv3.Client, error) {
	return NewClient([]string{m.ClientURL}, m.TLS)
}

// NewClient connects a quiet client to endpoints.
func NewClient(endpoints []string, tlsCfg *tls.Config) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: tlsCfg})
	if err != nil {
		return nil, fmt.Errorf("connect to %v: %w", endpoints, err)
	}
	return c, nil
}
