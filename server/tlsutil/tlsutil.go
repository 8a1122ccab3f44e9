package tlsutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// Info is one side's TLS material (client listener or peer).
type Info struct {
	CertFile       string
	KeyFile        string
	TrustedCAFile  string
	ClientCertAuth bool
	// ClientCertFile and ClientKeyFile are what this member presents when it dials (default:
	// CertFile and KeyFile), for certificates issued for server or client use only.
	ClientCertFile string
	ClientKeyFile  string
	// CRLFile lists revoked certificates, refused at the handshake (read at each one, so a
	// new list takes effect without a restart).
	CRLFile string
	// AllowedCNs or AllowedHostnames, when set, limit which client certificates are accepted.
	AllowedCNs       []string
	AllowedHostnames []string
	// AutoTLS asks for a self-signed certificate when no files are given; SelfSigned marks one
	// in use (its peers cannot be verified, so the dialing side skips verification).
	AutoTLS    bool
	SelfSigned bool
	// SkipClientSANVerify turns off the check that a client certificate's IP or DNS names match
	// the address it connects from.
	SkipClientSANVerify bool
	// CipherSuites, MinVersion and MaxVersion apply to both sides (0 or empty: Go's choice,
	// with TLS 1.2 as the floor).
	CipherSuites []uint16
	MinVersion   uint16
	MaxVersion   uint16
}

// base is the settings common to both sides.
func (i Info) base() *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: i.MaxVersion, CipherSuites: i.CipherSuites}
	if i.MinVersion != 0 {
		cfg.MinVersion = i.MinVersion
	}
	return cfg
}

// Empty reports whether no TLS material was given.
func (i Info) Empty() bool { return i.CertFile == "" && i.KeyFile == "" }

// Validate checks that the files go together and can be read.
func (i Info) Validate(prefix string) error {
	if (i.CertFile == "") != (i.KeyFile == "") {
		return fmt.Errorf("--%scert-file and --%skey-file must be given together", prefix, prefix)
	}
	cp := prefix
	if cp == "" {
		cp = "client-"
	} else {
		cp = prefix + "client-"
	}
	if len(i.AllowedCNs) > 0 && len(i.AllowedHostnames) > 0 {
		return fmt.Errorf("AllowedCNs and AllowedHostnames are mutually exclusive (cns=%q, hostnames=%q)", i.AllowedCNs, i.AllowedHostnames)
	}
	if i.CRLFile != "" {
		if _, err := loadCRL(i.CRLFile); err != nil {
			return fmt.Errorf("--%scrl-file: %w", prefix, err)
		}
	}
	if (i.ClientCertFile == "") != (i.ClientKeyFile == "") {
		return fmt.Errorf("--%scert-file and --%skey-file must be given together", cp, cp)
	}
	if i.ClientCertFile != "" {
		if _, err := tls.LoadX509KeyPair(i.ClientCertFile, i.ClientKeyFile); err != nil {
			return fmt.Errorf("--%scert-file/--%skey-file: %w", cp, cp, err)
		}
	}
	if i.ClientCertAuth && i.TrustedCAFile == "" {
		return fmt.Errorf("--%sclient-cert-auth requires --%strusted-ca-file", prefix, prefix)
	}
	if i.Empty() {
		return nil
	}
	if _, err := tls.LoadX509KeyPair(i.CertFile, i.KeyFile); err != nil {
		return fmt.Errorf("--%scert-file/--%skey-file: %w", prefix, prefix, err)
	}
	if i.TrustedCAFile != "" {
		if _, err := loadPool(i.TrustedCAFile); err != nil {
			return fmt.Errorf("--%strusted-ca-file: %w", prefix, err)
		}
	}
	return nil
}

func loadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificates", path)
	}
	return pool, nil
}

// ServerConfig is the listener side: our certificate, and client verification when asked.
func (i Info) ServerConfig(nextProtos ...string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(i.CertFile, i.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load certificate: %w", err)
	}
	cfg := i.base()
	cfg.Certificates, cfg.NextProtos = []tls.Certificate{cert}, nextProtos
	if i.TrustedCAFile != "" {
		pool, err := loadPool(i.TrustedCAFile)
		if err != nil {
			return nil, err
		}
		// A trusted CA alone makes every connection show a certificate it signed, as upstream's
		// listeners require (--client-cert-auth adds the certificate's name as the auth user).
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if len(i.AllowedCNs) > 0 || len(i.AllowedHostnames) > 0 {
		cfg.VerifyPeerCertificate = i.verifyAllowed
	}
	// Checks that need the client's address get a configuration per connection.
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		c := cfg.Clone()
		c.GetConfigForClient = nil
		remote := hello.Conn.RemoteAddr().String()
		c.VerifyConnection = func(cs tls.ConnectionState) error { return i.checkClient(cs, remote) }
		return c, nil
	}
	return cfg, nil
}

// verifyAllowed accepts a verified client certificate whose common name, or host names, are
// among those allowed (upstream's AllowedCNs / AllowedHostnames).
func (i Info) verifyAllowed(_ [][]byte, chains [][]*x509.Certificate) error {
	for _, chain := range chains {
		if len(chain) == 0 {
			continue
		}
		leaf := chain[0]
		for _, cn := range i.AllowedCNs {
			if leaf.Subject.CommonName == cn {
				return nil
			}
		}
		for _, h := range i.AllowedHostnames {
			if leaf.VerifyHostname(h) == nil {
				return nil
			}
		}
	}
	return errors.New("client certificate authentication failed")
}

// checkClient refuses, after the handshake, a revoked client certificate and (unless skipped)
// one whose IP or DNS names do not name the address it connects from, as upstream does.
func (i Info) checkClient(cs tls.ConnectionState, remote string) error {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	if !i.SkipClientSANVerify {
		if err := checkSAN(cs.PeerCertificates[0], remote); err != nil {
			return err
		}
	}
	if i.CRLFile != "" {
		revoked, err := loadCRL(i.CRLFile)
		if err != nil {
			return err
		}
		for _, c := range cs.PeerCertificates {
			if revoked[string(c.SerialNumber.Bytes())] {
				return fmt.Errorf("transport: certificate serial %x revoked", c.SerialNumber.Bytes())
			}
		}
	}
	return nil
}

// checkSAN accepts a certificate without names, or one naming the remote IP, or one whose DNS
// names include a name the remote address resolves back to.
func checkSAN(cert *x509.Certificate, remote string) error {
	if len(cert.IPAddresses) == 0 && len(cert.DNSNames) == 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return err
	}
	if len(cert.IPAddresses) > 0 {
		if cert.VerifyHostname(host) == nil {
			return nil
		}
		if len(cert.DNSNames) == 0 {
			return fmt.Errorf("tls: client certificate is not valid for %s", host)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	names, _ := net.DefaultResolver.LookupAddr(ctx, host)
	for _, n := range names {
		n = strings.TrimSuffix(n, ".")
		for _, d := range cert.DNSNames {
			if d == n || (strings.HasPrefix(d, "*.") && strings.HasSuffix(n, d[1:])) {
				return nil
			}
		}
	}
	return fmt.Errorf("tls: %q does not match any of DNSNames %q", host, cert.DNSNames)
}

// loadCRL reads a revocation list (PEM or DER) into the set of revoked serial numbers.
func loadCRL(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if blk, _ := pem.Decode(b); blk != nil {
		b = blk.Bytes
	}
	list, err := x509.ParseRevocationList(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	revoked := map[string]bool{}
	for _, e := range list.RevokedCertificateEntries {
		revoked[string(e.SerialNumber.Bytes())] = true
	}
	return revoked, nil
}

// ClientConfig is the dialing side: trust the CA, present our certificate.
func (i Info) ClientConfig() (*tls.Config, error) {
	cfg := i.base()
	if i.TrustedCAFile != "" {
		pool, err := loadPool(i.TrustedCAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if i.SelfSigned {
		cfg.InsecureSkipVerify = true // a self-signed peer cannot be verified, as upstream
	}
	if len(i.AllowedCNs) > 0 || len(i.AllowedHostnames) > 0 {
		// As upstream, the names allowed for peers hold for the side that answers too.
		cfg.VerifyPeerCertificate = i.verifyAllowed
	}
	certFile, keyFile := i.CertFile, i.KeyFile
	if i.ClientCertFile != "" {
		certFile, keyFile = i.ClientCertFile, i.ClientKeyFile
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("load certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
