package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"
)

// tlsMember is a one-member cluster serving https clients with certs, with more flags.
func tlsMember(t *testing.T, certs Certs, extra ...string) *Member {
	t.Helper()
	m := NewMember(t, append([]string{"--cert-file", certs.ServerCert, "--key-file", certs.ServerKey,
		"--trusted-ca-file", certs.CA, "--client-cert-auth"}, extra...)...)
	m.ClientURL = strings.Replace(m.ClientURL, "http://", "https://", 1)
	m.TLS = certs.ClientTLS(t, true)
	return m
}

// putWith tries one write with a client TLS configuration.
func putWith(t *testing.T, m *Member, cfg *tls.Config) error {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 3 * time.Second, Logger: zap.NewNop(), TLS: cfg})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = c.Put(ctx, "k", "v")
	return err
}

// TestTLSHardeningFlags: --client-crl-file refuses a revoked certificate (re-read at each
// handshake), --client-cert-allowed-hostname accepts only certificates for that name, and a
// refused handshake is logged as upstream logs it.
func TestTLSHardeningFlags(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	certs := NewCerts(t)
	crl := filepath.Join(t.TempDir(), "current.crl")
	copyFile(t, certs.CRL, crl)
	m := tlsMember(t, certs, "--client-crl-file", crl)
	// The harness's own client would use the revoked certificate: wait for readiness on the
	// plain-HTTP metrics URL instead.
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, m)
	if err := putWith(t, m, certs.ClientTLS(t, true)); err == nil {
		t.Fatal("a revoked client certificate was accepted")
	}
	if !m.LogHas(`"msg":"rejected connection on client endpoint"`) {
		t.Fatalf("the refused handshake was not logged:\n%s", m.LogTail(10))
	}
	copyFile(t, certs.EmptyCRL, crl)
	if err := putWith(t, m, certs.ClientTLS(t, true)); err != nil {
		t.Fatalf("after the revocation list was emptied: %v", err)
	}
	m.Stop()

	for _, c := range []struct {
		host string
		ok   bool
	}{{"localhost", true}, {"other.example", false}} {
		h := tlsMember(t, certs, "--client-cert-allowed-hostname", c.host)
		if err := h.StartNoWait(); err != nil {
			t.Fatal(err)
		}
		waitReady(t, h)
		if err := putWith(t, h, certs.ClientTLS(t, true)); (err == nil) != c.ok {
			t.Fatalf("--client-cert-allowed-hostname %s: put err = %v", c.host, err)
		}
		h.Stop()
	}
}

// TestPeerTLSFlags: --peer-cert-allowed-cn admits peers whose certificate has that common name
// and refuses the others; --peer-auto-tls and --auto-tls run a cluster on self-signed
// certificates valid for --self-signed-cert-validity years.
func TestPeerTLSFlags(t *testing.T) {
	certs := NewCerts(t)
	ok := NewCluster(t, 3, "--peer-cert-allowed-cn", "server")
	ok.UseTLS(certs)
	ok.Start()
	if _, err := ok.Client().Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}

	refused := NewCluster(t, 2, "--peer-cert-allowed-cn", "nobody")
	refused.UseTLS(certs)
	for _, m := range refused.Members {
		if err := m.StartNoWait(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for !refused.Members[0].LogHas("rejected connection on peer endpoint") {
		if time.Now().After(deadline) {
			t.Fatalf("no peer refused for its common name:\n%s", refused.Members[0].LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := refused.Members[0].WaitHealthy(2 * time.Second); err == nil {
		t.Fatal("peers with a common name outside --peer-cert-allowed-cn formed a cluster")
	}

	auto := NewCluster(t, 3, "--peer-auto-tls", "--auto-tls", "--self-signed-cert-validity", "2")
	for _, m := range auto.Members {
		m.ClientURL = strings.Replace(m.ClientURL, "http://", "https://", 1)
		m.PeerURL = strings.Replace(m.PeerURL, "http://", "https://", 1)
		m.TLS = &tls.Config{InsecureSkipVerify: true}
	}
	var ic []string
	for _, m := range auto.Members {
		ic = append(ic, m.Name+"="+m.PeerURL)
	}
	for _, m := range auto.Members {
		m.InitialCluster = strings.Join(ic, ",")
	}
	auto.Start()
	if _, err := auto.Client().Put(Ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"client", "peer"} {
		b, err := os.ReadFile(filepath.Join(auto.Members[0].DataDir, "fixtures", side, "cert.pem"))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if years := time.Until(cert.NotAfter).Hours() / 24 / 365; years < 1.9 || years > 2.1 {
			t.Fatalf("%s certificate valid for %.1f years, want 2", side, years)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits for the member's /readyz on its metrics URL (plain HTTP).
func waitReady(t *testing.T, m *Member) {
	t.Helper()
	for i := 0; i < 100; i++ {
		resp, err := http.Get(m.MetricsURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never became ready:\n%s", m.Name, m.LogTail(20))
}

// TestPeerSkipClientSANVerification: a peer whose client certificate names another host is
// refused (its names must match the address it connects from), unless
// --peer-skip-client-san-verification is set.
func TestPeerSkipClientSANVerification(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	certs := NewCerts(t)
	for _, skip := range []bool{false, true} {
		c := NewCluster(t, 2, "--peer-client-cert-file", certs.ElsewhereCert, "--peer-client-key-file", certs.ElsewhereKey,
			"--peer-skip-client-san-verification="+strconv.FormatBool(skip))
		c.UseTLS(certs)
		for _, m := range c.Members {
			if err := m.StartNoWait(); err != nil {
				t.Fatal(err)
			}
		}
		err := c.Members[0].WaitHealthy(8 * time.Second)
		if (err == nil) != skip {
			t.Fatalf("--peer-skip-client-san-verification=%t: healthy = %t\n%s", skip, err == nil, c.Members[0].LogTail(10))
		}
		for _, m := range c.Members {
			m.Kill()
		}
	}
}

// TestCipherSuites: with --cipher-suites (and TLS 1.2) a client offering only other suites
// is refused. The names are upstream's: Go's, and the short CHACHA20_POLY1305 names upstream
// also takes.
func TestCipherSuites(t *testing.T) {
	certs := NewCerts(t)
	// HTTP/2 needs an AES-128-GCM suite, so that one is allowed (upstream cannot start otherwise either).
	m := tlsMember(t, certs, "--cipher-suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "--tls-max-version", "TLS1.2")
	m.Start()
	addr := strings.TrimPrefix(m.ClientURL, "https://")
	for _, c := range []struct {
		suite uint16
		ok    bool
	}{{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, true}, {tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, true}, {tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, false}} {
		cfg := certs.ClientTLS(t, true)
		cfg.MaxVersion, cfg.CipherSuites = tls.VersionTLS12, []uint16{c.suite}
		conn, err := tls.Dial("tcp", addr, cfg)
		if conn != nil {
			conn.Close()
		}
		if (err == nil) != c.ok {
			t.Fatalf("client offering %s: err = %v", tls.CipherSuiteName(c.suite), err)
		}
	}
}

// TestClientCertsOnClientEndpointsAsUpstream: on client endpoints, --client-cert-auth asks only
// for a certificate the trusted CA signed, as upstream 3.7.3 (run beside ours) does: over a
// unixs socket, which has no address to match, and from 127.0.0.1 with a certificate naming
// another host (only peer connections check a certificate's names against the address). A
// connection without a certificate is refused on both.
func TestClientCertsOnClientEndpointsAsUpstream(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	certs := NewCerts(t)
	elsewhere := certs.ClientTLS(t, false)
	cert, err := tls.LoadX509KeyPair(certs.ElsewhereCert, certs.ElsewhereKey)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere.Certificates = []tls.Certificate{cert}
	for name, bin := range map[string]string{"ours": ServerAt(t, CurrentLevel), "upstream": UpstreamBinaryAt(t, Upstream37Version, "etcd")} {
		dir := t.TempDir()
		m := tlsMember(t, certs)
		m.Bin, m.WorkDir = bin, dir
		sock := fmt.Sprintf("localhost:%d", FreePort(t))
		m.ListenClientURL = m.ClientURL + ",unixs://" + sock
		m.Start()
		if err := putWith(t, m, elsewhere); err != nil {
			t.Errorf("%s: a client certificate naming another host: %v", name, err)
		}
		if err := putWith(t, m, certs.ClientTLS(t, false)); err == nil {
			t.Errorf("%s: a client without a certificate was served", name)
		}
		viaSocket := *m
		viaSocket.ClientURL = "unixs://" + filepath.Join(dir, sock)
		withCert := certs.ClientTLS(t, true)
		withCert.ServerName = "localhost"
		if err := putWith(t, &viaSocket, withCert); err != nil {
			t.Errorf("%s: TLS over the unix socket: %v", name, err)
		}
		m.Kill()
	}
}

// TestMaxConcurrentStreamsOnTLSPort: --max-concurrent-streams holds on a TLS client port too,
// where gRPC is served through net/http's HTTP/2 server: with the streams of a connection all
// taken by watches, another call on it waits, as upstream's (upstream 3.5's
// TestV3Curl_MaxStreams_ReachLimit_TLS_*).
func TestMaxConcurrentStreamsOnTLSPort(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	certs := NewCerts(t)
	m := tlsMember(t, certs, "--max-concurrent-streams", "2")
	m.Start()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 3 * time.Second, Logger: zap.NewNop(), TLS: certs.ClientTLS(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 2 {
		// Each watch on its own stream: distinct metadata makes the client open a new one.
		wctx := clientv3.WithRequireLeader(ctx)
		if i == 1 {
			wctx = metadata.AppendToOutgoingContext(ctx, "stream", "second")
		}
		c.Watch(wctx, fmt.Sprintf("w%d", i))
	}
	time.Sleep(500 * time.Millisecond)
	gctx, gcancel := context.WithTimeout(context.Background(), time.Second)
	defer gcancel()
	if _, err := c.Get(gctx, "k"); err == nil {
		t.Fatal("a call beyond --max-concurrent-streams on the connection was served at once")
	}
	cancel() // the watches end: the call goes through again
	deadline := time.Now().Add(5 * time.Second)
	for {
		gctx, gcancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Get(gctx, "k")
		gcancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls after the watches ended: %v", err)
		}
	}
}
