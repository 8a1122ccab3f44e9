package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SelfCert is --auto-tls / --peer-auto-tls: a self-signed certificate for hosts (the listen
// URLs' host:port), valid for validityYears, kept as cert.pem and key.pem in dir and reused
// when they exist, as upstream keeps them under <data-dir>/fixtures. It returns Info for it.
func SelfCert(dir string, hosts []string, validityYears uint) (Info, error) {
	info := Info{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), SelfSigned: true}
	_, cerr := os.Stat(info.CertFile)
	_, kerr := os.Stat(info.KeyFile)
	if cerr == nil && kerr == nil {
		return info, nil
	}
	if validityYears == 0 {
		validityYears = 1
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return info, err
	}
	tmpl := x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{Organization: []string{"etcd"}},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Duration(validityYears) * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		host, _, err := net.SplitHostPort(h)
		if err != nil {
			host = h
		}
		if ip := net.ParseIP(host); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, host)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		return info, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	if err != nil {
		return info, fmt.Errorf("self-signed certificate: %w", err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return info, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return info, err
	}
	if err := os.WriteFile(info.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return info, err
	}
	if err := os.WriteFile(info.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return info, err
	}
	return info, nil
}
