package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeKeys writes a PKCS#8 private key and its PKIX public key as PEM files.
func writeKeys(t *testing.T, priv crypto.Signer) (privPath, pubPath string) {
	t.Helper()
	dir := t.TempDir()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	privPath, pubPath = filepath.Join(dir, "priv.pem"), filepath.Join(dir, "pub.pem")
	os.WriteFile(privPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600)
	return privPath, pubPath
}

func TestJWTTokens(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	hmac := filepath.Join(t.TempDir(), "hmac")
	os.WriteFile(hmac, []byte("a shared secret of some length"), 0o600)
	for _, c := range []struct {
		method string
		key    crypto.Signer
	}{{"RS256", rsaKey}, {"PS384", rsaKey}, {"ES256", ecKey}, {"EdDSA", edKey}, {"HS256", nil}} {
		opts := "jwt,sign-method=" + c.method + ",priv-key=" + hmac
		verify := ""
		if c.key != nil {
			priv, pub := writeKeys(t, c.key)
			opts = "jwt,sign-method=" + c.method + ",priv-key=" + priv + ",pub-key=" + pub
			verify = "jwt,sign-method=" + c.method + ",pub-key=" + pub
		}
		tk, err := NewTokens(opts+",ttl=1m", time.Minute, applied, quiet)
		if err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
		tok, err := tk.Assign("alice", 9, 0, "")
		if err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
		if in, ok := tk.Info(context.Background(), tok, 0); !ok || in.Username != "alice" || in.Revision != 9 {
			t.Fatalf("%s: info %+v %v", c.method, in, ok)
		}
		if _, ok := tk.Info(context.Background(), tok+"x", 0); ok {
			t.Fatalf("%s: a damaged token was accepted", c.method)
		}
		if verify == "" {
			continue
		}
		// A member with only the public key reads tokens and cannot issue them.
		vo, err := NewTokens(verify, time.Minute, applied, quiet)
		if err != nil {
			t.Fatalf("%s verify-only: %v", c.method, err)
		}
		if _, ok := vo.Info(context.Background(), tok, 0); !ok {
			t.Fatalf("%s: verify-only member refused a good token", c.method)
		}
		if _, err := vo.Assign("alice", 9, 0, ""); !errors.Is(err, ErrVerifyOnly) {
			t.Fatalf("%s: verify-only member signed: %v", c.method, err)
		}
	}
	// An expired token is refused.
	short, err := NewTokens("jwt,sign-method=HS256,ttl=1ms,priv-key="+hmac, time.Minute, applied, quiet)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := short.Assign("alice", 1, 0, "")
	time.Sleep(1100 * time.Millisecond) // exp has one-second resolution
	if _, ok := short.Info(context.Background(), tok, 0); ok {
		t.Fatal("expired token accepted")
	}
	// A public key that is not the private key's pair is refused at start.
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	priv, _ := writeKeys(t, ecKey)
	_, otherPub := writeKeys(t, otherKey)
	if _, err := NewTokens("jwt,sign-method=ES256,priv-key="+priv+",pub-key="+otherPub, time.Minute, applied, quiet); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("mismatched keys: %v", err)
	}
}
