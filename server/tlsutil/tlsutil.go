// Package tlsutil builds TLS configurations from upstream etcd's flags: a certificate and key,
// an optional trusted CA, and whether clients must present a certificate signed by it.
package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
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
	// Settings upstream has and this server refuses to take until they are implemented.
	CRLFile             string
	AllowedCNs          []string
	AllowedHostnames    []string
	AutoTLS             bool
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
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if i.ClientCertAuth {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return cfg, nil
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
