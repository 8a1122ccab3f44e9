package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DiscoveryService is one `discovery serve` process with its own member holding the tokens.
type DiscoveryService struct {
	t         testing.TB
	Dir       string
	ClientURL string // what members pass as --discovery-endpoints
	PeerURL   string
	APIURL    string

	cmd    *exec.Cmd
	exited chan struct{}
}

// NewDiscoveryService prepares a service on fresh ports; Start runs it.
func NewDiscoveryService(t testing.TB) *DiscoveryService {
	t.Helper()
	d := &DiscoveryService{t: t, Dir: t.TempDir(),
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
		PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
		APIURL:    fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
	}
	t.Cleanup(d.Kill)
	return d
}

// Start launches the service and waits until its token API reports the member healthy.
func (d *DiscoveryService) Start() {
	d.t.Helper()
	f, err := os.OpenFile(filepath.Join(d.Dir, "discovery.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		d.t.Fatal(err)
	}
	d.cmd = exec.Command(Binary(d.t, "discovery"), "serve", "--data-dir", filepath.Join(d.Dir, "data"),
		"--listen-client-urls", d.ClientURL, "--listen-peer-urls", d.PeerURL, "--listen-api-url", d.APIURL)
	d.cmd.Stdout, d.cmd.Stderr = f, f
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.exited = make(chan struct{})
	go func() { d.cmd.Wait(); f.Close(); close(d.exited) }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-d.exited:
			d.t.Fatalf("discovery service exited:\n%s", d.Log())
		default:
		}
		if code, _ := d.Do("GET", "/health"); code == http.StatusOK {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.t.Fatalf("discovery service not healthy within 20s:\n%s", d.Log())
}

// Stop sends SIGTERM and waits.
func (d *DiscoveryService) Stop() {
	if d.cmd == nil || d.exited == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		d.t.Errorf("discovery service did not stop within 20s of SIGTERM")
		d.Kill()
	}
}

// Kill ends the process at once.
func (d *DiscoveryService) Kill() {
	if d.cmd == nil || d.exited == nil {
		return
	}
	select {
	case <-d.exited:
	default:
		d.cmd.Process.Kill()
		<-d.exited
	}
}

// Log is the service's output.
func (d *DiscoveryService) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, "discovery.log"))
	return string(b)
}

// Do sends a request to the token API and returns the status and body.
func (d *DiscoveryService) Do(method, path string) (int, string) {
	req, err := http.NewRequest(method, d.APIURL+path, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// NewToken creates a token for size members through the API.
func (d *DiscoveryService) NewToken(size int) string {
	d.t.Helper()
	code, body := d.Do("POST", fmt.Sprintf("/new?size=%d&format=text", size))
	if code != http.StatusCreated {
		d.t.Fatalf("POST /new: %d %s", code, body)
	}
	return strings.TrimSpace(body)
}

// TokenState is the API's view of a token.
type TokenState struct {
	Token      string `json:"token"`
	Size       int    `json:"size"`
	Registered []struct {
		ID       string   `json:"id"`
		Name     string   `json:"name"`
		PeerURLs []string `json:"peerURLs"`
	} `json:"registered"`
	Extra          []json.RawMessage `json:"extra"`
	Complete       bool              `json:"complete"`
	InitialCluster string            `json:"initialCluster"`
}

// Token reads a token's state through the API.
func (d *DiscoveryService) Token(token string) TokenState {
	d.t.Helper()
	code, body := d.Do("GET", "/tokens/"+token)
	if code != http.StatusOK {
		d.t.Fatalf("GET /tokens/%s: %d %s", token, code, body)
	}
	var st TokenState
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		d.t.Fatalf("GET /tokens/%s: %v: %s", token, err, body)
	}
	return st
}

// DiscoveryMembers prepares n members m1..mn that bootstrap through the token.
func DiscoveryMembers(t testing.TB, n int, endpoints, token string) []*Member {
	var ms []*Member
	for i := 1; i <= n; i++ {
		m := NewMember(t)
		m.Name = fmt.Sprintf("m%d", i)
		m.Discovery = []string{"--discovery-endpoints", endpoints, "--discovery-token", token}
		ms = append(ms, m)
	}
	return ms
}
