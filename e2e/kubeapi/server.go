package kubeapi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"etcdx/upgradelab/cluster"
)

// Options says how to run kube-apiserver.
type Options struct {
	Bin  string // kube-apiserver
	Dir  string // its certificates, keys, token file and log
	Etcd string // --etcd-servers (an http:// client URL)
	// Extra flags, appended after the defaults (a later flag wins).
	Extra []string
}

// Server is a running kube-apiserver and an admin client of it.
type Server struct {
	URL   string // https://127.0.0.1:port
	Log   string
	cmd   *exec.Cmd
	done  chan struct{} // closed once the process exited
	token string
	http  *http.Client
}

// flags are kubeadm's kube-apiserver command line (its control-plane manifest), with this
// machine's addresses and files; the authentication is a static admin token.
func flags(o Options, port int, token string) []string {
	return append([]string{
		"--advertise-address=192.0.2.10", // only written into the kubernetes service's endpoints
		"--allow-privileged=true",
		"--authorization-mode=Node,RBAC",
		"--bind-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(o.Dir, "certs"),
		"--enable-admission-plugins=NodeRestriction",
		"--enable-bootstrap-token-auth=true",
		"--etcd-servers=" + o.Etcd,
		"--secure-port=" + strconv.Itoa(port),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(o.Dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(o.Dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/12",
		"--token-auth-file=" + filepath.Join(o.Dir, "tokens.csv"),
	}, o.Extra...)
}

// Start writes the service-account key pair and the token file into o.Dir, starts
// kube-apiserver and waits until /readyz answers ok (at most timeout).
func Start(o Options, timeout time.Duration) (*Server, error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeServiceAccountKeys(o.Dir); err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	token := hex.EncodeToString(tok)
	if err := os.WriteFile(filepath.Join(o.Dir, "tokens.csv"), []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("https://127.0.0.1:%d", port), Log: filepath.Join(o.Dir, "kube-apiserver.log"), token: token,
		http: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, // its own self-signed certificate
			MaxIdleConnsPerHost: 64,
		}}}
	logf, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	s.cmd = exec.Command(o.Bin, flags(o, port, token)...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	s.done = make(chan struct{})
	var waitErr error
	go func() { waitErr = s.cmd.Wait(); close(s.done) }()
	deadline := time.After(timeout)
	for {
		if code, _, err := s.Do(context.Background(), "GET", "/readyz", "", nil, nil); err == nil && code == http.StatusOK {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("kube-apiserver exited before it was ready (%v); see %s", waitErr, s.Log)
		case <-deadline:
			s.Stop()
			return nil, fmt.Errorf("kube-apiserver not ready after %v; see %s", timeout, s.Log)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop ends kube-apiserver (SIGTERM, then SIGKILL after 20 s).
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Do sends one request as the admin; contentType defaults to JSON. It returns the status and
// the body; out, when set, gets the body decoded as JSON.
func (s *Server) Do(ctx context.Context, method, path, contentType string, body []byte, out any) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if contentType == "" {
		contentType = "application/json"
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, b, err
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, b, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, b, nil
}

// Stream opens a long-running GET (a watch) as the admin; the caller closes the body.
func (s *Server) Stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	c := *s.http
	c.Timeout = 0
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return resp.Body, nil
}

func writeServiceAccountKeys(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}
