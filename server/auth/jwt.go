package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// jwtTokens are signed tokens with upstream's claims (username, revision, exp): any member
// with the key can read them, so nothing is kept in memory. A member given only a public key
// verifies tokens but cannot issue them.
type jwtTokens struct {
	lg         *slog.Logger
	method     jwt.SigningMethod
	signKey    any // nil when verify-only
	verifyKey  any
	ttl        time.Duration
	verifyOnly bool
}

func newJWTTokens(params map[string]string, lg *slog.Logger) (*jwtTokens, error) {
	t := &jwtTokens{lg: lg, ttl: 5 * time.Minute}
	var unknown []string
	for k := range params {
		switch k {
		case "pub-key", "priv-key", "sign-method", "ttl":
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		lg.Warn("unknown JWT options", "keys", unknown)
	}
	if v := params["ttl"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			lg.Error("problem loading JWT options", "error", err.Error())
			return nil, fmt.Errorf("%w: ttl: %v", ErrInvalidAuthOpts, err)
		}
		t.ttl = d
	}
	read := func(opt string) ([]byte, error) {
		if params[opt] == "" {
			return nil, nil
		}
		b, err := os.ReadFile(params[opt])
		if err != nil {
			lg.Error("problem loading JWT options", "error", err.Error())
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidAuthOpts, opt, err)
		}
		return b, nil
	}
	pubPEM, err := read("pub-key")
	if err != nil {
		return nil, err
	}
	privPEM, err := read("priv-key")
	if err != nil {
		return nil, err
	}
	t.method = jwt.GetSigningMethod(params["sign-method"])
	if t.method == nil {
		lg.Error("problem loading JWT options", "error", ErrInvalidAuthMethod.Error())
		return nil, ErrInvalidAuthOpts
	}
	if err := t.loadKeys(pubPEM, privPEM); err != nil {
		return nil, err
	}
	return t, nil
}

// loadKeys parses the PEM files for the signing method's family; the public key, when given
// with a private one, must be its pair.
func (t *jwtTokens) loadKeys(pubPEM, privPEM []byte) error {
	type pair struct {
		priv crypto.Signer
		pub  crypto.PublicKey
	}
	var p pair
	var err error
	switch t.method.(type) {
	case *jwt.SigningMethodHMAC:
		if len(privPEM) == 0 {
			return ErrMissingKey
		}
		t.signKey, t.verifyKey = privPEM, privPEM
		return nil
	case *jwt.SigningMethodRSA, *jwt.SigningMethodRSAPSS:
		if len(privPEM) > 0 {
			var k *rsa.PrivateKey
			if k, err = jwt.ParseRSAPrivateKeyFromPEM(privPEM); err != nil {
				return err
			}
			p.priv = k
		}
		if len(pubPEM) > 0 {
			if p.pub, err = jwt.ParseRSAPublicKeyFromPEM(pubPEM); err != nil {
				return err
			}
		}
	case *jwt.SigningMethodECDSA:
		if len(privPEM) > 0 {
			var k *ecdsa.PrivateKey
			if k, err = jwt.ParseECPrivateKeyFromPEM(privPEM); err != nil {
				return err
			}
			p.priv = k
		}
		if len(pubPEM) > 0 {
			if p.pub, err = jwt.ParseECPublicKeyFromPEM(pubPEM); err != nil {
				return err
			}
		}
	case *jwt.SigningMethodEd25519:
		if len(privPEM) > 0 {
			k, err := jwt.ParseEdPrivateKeyFromPEM(privPEM)
			if err != nil {
				return err
			}
			s, ok := k.(ed25519.PrivateKey)
			if !ok {
				return fmt.Errorf("%w: priv-key is not an Ed25519 key", ErrInvalidAuthOpts)
			}
			p.priv = s
		}
		if len(pubPEM) > 0 {
			if p.pub, err = jwt.ParseEdPublicKeyFromPEM(pubPEM); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unsupported signing method: %T", t.method)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	switch {
	case p.priv == nil && p.pub == nil:
		return ErrMissingKey
	case p.priv == nil:
		t.verifyKey, t.verifyOnly = p.pub, true
	default:
		if p.pub != nil {
			if e, ok := p.pub.(equaler); !ok || !e.Equal(p.priv.Public()) {
				return ErrKeyMismatch
			}
		}
		t.signKey, t.verifyKey = p.priv, p.priv.Public()
	}
	return nil
}

func (t *jwtTokens) Prefix() (string, error) { return "", nil }
func (t *jwtTokens) InvalidateUser(string)   {}
func (t *jwtTokens) Enable()                 {}
func (t *jwtTokens) Disable()                {}

func (t *jwtTokens) Assign(user string, rev, _ uint64, _ string) (string, error) {
	if t.verifyOnly {
		return "", ErrVerifyOnly
	}
	tok := jwt.NewWithClaims(t.method, jwt.MapClaims{
		"username": user,
		"revision": rev,
		"exp":      time.Now().Add(t.ttl).Unix(),
	})
	s, err := tok.SignedString(t.signKey)
	if err != nil {
		t.lg.Debug("failed to sign a JWT token", "user-name", user, "revision", rev, "error", err.Error())
		return "", err
	}
	return s, nil
}

func (t *jwtTokens) Info(_ context.Context, token string, _ uint64) (*Info, bool) {
	parsed, err := jwt.Parse(token, func(tok *jwt.Token) (any, error) {
		if tok.Method.Alg() != t.method.Alg() {
			return nil, errors.New("invalid signing method")
		}
		return t.verifyKey, nil
	})
	if err != nil {
		t.lg.Warn("failed to parse a JWT token", "error", err.Error())
		return nil, false
	}
	claims, ok := parsed.Claims.(jwt.MapClaims)
	if !ok || !parsed.Valid {
		t.lg.Warn("failed to obtain claims from a JWT token")
		return nil, false
	}
	user, ok := claims["username"].(string)
	if !ok {
		t.lg.Warn("failed to obtain user claims from jwt token")
		return nil, false
	}
	rev, ok := claims["revision"].(float64)
	if !ok {
		t.lg.Warn("failed to obtain revision claims from jwt token")
		return nil, false
	}
	return &Info{Username: user, Revision: uint64(rev)}, true
}
