package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func selfCert(t *testing.T, hosts ...string) Info {
	t.Helper()
	info, err := SelfCert(t.TempDir(), hosts, 1)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestValidate(t *testing.T) {
	good := selfCert(t, "127.0.0.1:2379")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		info Info
		err  string
	}{
		{"nothing given", Info{}, ""},
		{"a certificate and its key", Info{CertFile: good.CertFile, KeyFile: good.KeyFile}, ""},
		{"a certificate without a key", Info{CertFile: good.CertFile}, "--peer-cert-file and --peer-key-file must be given together"},
		{"client certificate without its key", Info{ClientCertFile: good.CertFile}, "--peer-client-cert-file and --peer-client-key-file must be given together"},
		{"client-cert-auth without a CA", Info{CertFile: good.CertFile, KeyFile: good.KeyFile, ClientCertAuth: true}, "--peer-client-cert-auth requires --peer-trusted-ca-file"},
		{"allowed CNs and hostnames together", Info{AllowedCNs: []string{"a"}, AllowedHostnames: []string{"b"}}, "mutually exclusive"},
		{"a CA file with no certificate", Info{CertFile: good.CertFile, KeyFile: good.KeyFile, TrustedCAFile: junk}, "holds no PEM certificates"},
		{"an unreadable key pair", Info{CertFile: junk, KeyFile: junk}, "--peer-cert-file/--peer-key-file"},
		{"a CRL that is not one", Info{CRLFile: junk}, "--peer-crl-file"},
	} {
		err := c.info.Validate("peer-")
		if (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}

// handshake connects a client with clientInfo to a server with serverInfo over loopback and
// returns the first error either side saw.
func handshake(t *testing.T, serverInfo, clientInfo Info) error {
	t.Helper()
	scfg, err := serverInfo.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	ccfg, err := clientInfo.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	ccfg.ServerName = "127.0.0.1"
	ln, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serverErr := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer conn.Close()
		serverErr <- conn.(*tls.Conn).Handshake()
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), ccfg)
	if err == nil {
		// The client's handshake can finish before the server has judged its certificate.
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
		if err != nil && strings.Contains(err.Error(), "EOF") {
			err = nil
		}
	}
	if serr := <-serverErr; serr != nil {
		return serr
	}
	return err
}

func TestHandshakes(t *testing.T) {
	srv := selfCert(t, "127.0.0.1:2380")
	cli := selfCert(t, "127.0.0.1")
	other := selfCert(t, "10.9.9.9") // names an address the client does not connect from
	trusting := func(ca string, auth bool) Info {
		return Info{CertFile: srv.CertFile, KeyFile: srv.KeyFile, TrustedCAFile: ca, ClientCertAuth: auth}
	}
	dialer := func(i Info) Info { return Info{CertFile: i.CertFile, KeyFile: i.KeyFile, TrustedCAFile: srv.CertFile} }
	for _, c := range []struct {
		name           string
		server, client Info
		err            string
	}{
		{"server certificate only", Info{CertFile: srv.CertFile, KeyFile: srv.KeyFile}, Info{TrustedCAFile: srv.CertFile}, ""},
		{"client certificate required and trusted", trusting(cli.CertFile, true), dialer(cli), ""},
		{"client certificate required, none given", trusting(cli.CertFile, true), Info{TrustedCAFile: srv.CertFile}, "certificate"},
		{"client certificate from an untrusted issuer", trusting(cli.CertFile, true), dialer(other), "certificate"},
		{"client certificate naming another address", trusting(other.CertFile, true), dialer(other), "not valid for 127.0.0.1"},
		{"SAN check skipped", Info{CertFile: srv.CertFile, KeyFile: srv.KeyFile, TrustedCAFile: other.CertFile, ClientCertAuth: true, SkipClientSANVerify: true}, dialer(other), ""},
		{"server not trusted by the client", Info{CertFile: srv.CertFile, KeyFile: srv.KeyFile}, Info{TrustedCAFile: cli.CertFile}, "certificate"},
		{"self-signed peers skip verification", Info{CertFile: srv.CertFile, KeyFile: srv.KeyFile}, Info{SelfSigned: true}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := handshake(t, c.server, c.client)
			if (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("%v, want %q", err, c.err)
			}
		})
	}
}

func TestAllowedNames(t *testing.T) {
	leaf := &x509.Certificate{Subject: pkix.Name{CommonName: "etcd-client"}, DNSNames: []string{"client.example"}}
	chains := [][]*x509.Certificate{{leaf}}
	for _, c := range []struct {
		name string
		info Info
		ok   bool
	}{
		{"allowed CN", Info{AllowedCNs: []string{"other", "etcd-client"}}, true},
		{"CN not allowed", Info{AllowedCNs: []string{"other"}}, false},
		{"allowed hostname", Info{AllowedHostnames: []string{"client.example"}}, true},
		{"hostname not allowed", Info{AllowedHostnames: []string{"server.example"}}, false},
	} {
		if err := c.info.verifyAllowed(nil, chains); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestCheckSAN(t *testing.T) {
	// The DNS case is judged by what this machine's resolver says 127.0.0.1 is.
	names, _ := net.LookupAddr("127.0.0.1")
	resolvesToLocalhost := false
	for _, n := range names {
		resolvesToLocalhost = resolvesToLocalhost || strings.TrimSuffix(n, ".") == "localhost"
	}
	for _, c := range []struct {
		name   string
		cert   *x509.Certificate
		remote string
		ok     bool
	}{
		{"no names: accepted", &x509.Certificate{}, "10.0.0.1:5", true},
		{"the remote IP", &x509.Certificate{IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}, "127.0.0.1:5", true},
		{"another IP", &x509.Certificate{IPAddresses: []net.IP{net.ParseIP("10.0.0.2")}}, "127.0.0.1:5", false},
		{"a DNS name the address resolves to", &x509.Certificate{DNSNames: []string{"localhost"}}, "127.0.0.1:5", resolvesToLocalhost},
		{"a DNS name it does not resolve to", &x509.Certificate{DNSNames: []string{"elsewhere.invalid"}}, "127.0.0.1:5", false},
	} {
		if err := checkSAN(c.cert, c.remote); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestSelfCertIsKept(t *testing.T) {
	dir := t.TempDir()
	a, err := SelfCert(dir, []string{"127.0.0.1:2379", "localhost:2379"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(a.CertFile)
	if _, err := SelfCert(dir, []string{"127.0.0.1:2379"}, 1); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(a.CertFile)
	if string(first) != string(again) {
		t.Fatal("a second start replaced the certificate it had made (upstream keeps it)")
	}
	pair, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if leaf.VerifyHostname("127.0.0.1") != nil || leaf.VerifyHostname("localhost") != nil {
		t.Fatalf("the certificate names %v %v", leaf.IPAddresses, leaf.DNSNames)
	}
}
