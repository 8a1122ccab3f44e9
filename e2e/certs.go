package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certs are files of a test PKI: a CA, a certificate for 127.0.0.1 usable by servers and peers,
// and a client certificate.
type Certs struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	// ElsewhereCert names another host (10.9.9.9, elsewhere.invalid): a client certificate
	// whose names do not match a connection from 127.0.0.1.
	ElsewhereCert, ElsewhereKey string
	// CRL revokes the client certificate, ServerCRL the server one; EmptyCRL revokes nothing.
	CRL, ServerCRL, EmptyCRL string
}

// NewCerts writes a fresh CA and certificates into a temporary directory.
func NewCerts(t testing.TB) Certs {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leafFor := func(serial int64, cn string, usage []x509.ExtKeyUsage, ip, dns string) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage,
			IPAddresses: []net.IP{net.ParseIP(ip)}, DNSNames: []string{dns}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		return write(cn+".crt", "CERTIFICATE", der), write(cn+".key", "EC PRIVATE KEY", kb)
	}
	leaf := func(serial int64, cn string, usage []x509.ExtKeyUsage) (string, string) {
		return leafFor(serial, cn, usage, "127.0.0.1", "localhost")
	}
	c := Certs{CA: write("ca.crt", "CERTIFICATE", caDER)}
	c.ServerCert, c.ServerKey = leaf(2, "server", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	c.ClientCert, c.ClientKey = leaf(3, "client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	c.ElsewhereCert, c.ElsewhereKey = leafFor(4, "elsewhere", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, "10.9.9.9", "elsewhere.invalid")
	crl := func(name string, number int64, revoked ...int64) string {
		tmpl := &x509.RevocationList{Number: big.NewInt(number), ThisUpdate: time.Now().Add(-time.Hour), NextUpdate: time.Now().Add(24 * time.Hour)}
		for _, r := range revoked {
			tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{SerialNumber: big.NewInt(r), RevocationTime: time.Now()})
		}
		der, err := x509.CreateRevocationList(rand.Reader, tmpl, caCert, caKey)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name) // DER, which upstream reads (ours reads PEM too)
		if err := os.WriteFile(p, der, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c.CRL = crl("revoked.crl", 2, 3)
	c.ServerCRL = crl("server-revoked.crl", 3, 2)
	c.EmptyCRL = crl("empty.crl", 1)
	return c
}

// ClientTLS trusts the CA and presents the client certificate (or none when withCert is false).
func (c Certs) ClientTLS(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(c.CA)
	pool.AppendCertsFromPEM(b)
	cfg := &tls.Config{RootCAs: pool}
	if withCert {
		cert, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}
