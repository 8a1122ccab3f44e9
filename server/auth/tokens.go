package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Tokens issues and reads the tokens clients send back in the "token" metadata.
type Tokens interface {
	// Prefix is chosen by the member that receives Authenticate and replicated with it.
	Prefix() (string, error)
	// Assign makes a token for user when an Authenticate entry is applied (on every member, so
	// a token is valid on all of them); index is the one applied before that entry.
	Assign(user string, rev, index uint64, prefix string) (string, error)
	// Info reads a token; rev is the store's current revision.
	Info(ctx context.Context, token string, rev uint64) (*Info, bool)
	InvalidateUser(name string)
	Enable()
	Disable()
}

// NewTokens builds the provider --auth-token describes: "simple" (ttl from --auth-token-ttl)
// or "jwt,pub-key=...,priv-key=...,sign-method=...,ttl=...". appliedWait(i) closes once this
// member has applied index i.
func NewTokens(opts string, ttl time.Duration, appliedWait func(uint64) <-chan struct{}, lg *slog.Logger) (Tokens, error) {
	kind, params, err := splitTokenOpts(opts)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "simple", "":
		if len(params) > 0 {
			return nil, ErrInvalidAuthOpts
		}
		if kind == "simple" {
			lg.Warn("simple token is not cryptographically signed")
		}
		return newSimpleTokens(ttl, appliedWait, lg), nil
	case "jwt":
		return newJWTTokens(params, lg)
	default:
		lg.Warn("unknown token type", "type", kind, "error", ErrInvalidAuthOpts.Error())
		return nil, ErrInvalidAuthOpts
	}
}

// CheckTokenOptions checks --auth-token's form without reading key files, so a mistyped flag
// is refused before anything starts.
func CheckTokenOptions(opts string) error {
	kind, params, err := splitTokenOpts(opts)
	if err != nil {
		return err
	}
	switch kind {
	case "simple", "":
		if len(params) > 0 {
			return fmt.Errorf("%w: simple tokens take no options", ErrInvalidAuthOpts)
		}
		return nil
	case "jwt":
		if v := params["ttl"]; v != "" {
			if _, err := time.ParseDuration(v); err != nil {
				return fmt.Errorf("%w: ttl: %v", ErrInvalidAuthOpts, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown token type %q; want simple or jwt", ErrInvalidAuthOpts, kind)
}

func splitTokenOpts(s string) (string, map[string]string, error) {
	parts := strings.Split(s, ",")
	params := map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || strings.Contains(v, "=") {
			return "", nil, fmt.Errorf("%w: %q is not key=value", ErrInvalidAuthOpts, p)
		}
		if _, dup := params[k]; dup {
			return "", nil, fmt.Errorf("%w: %q given twice", ErrInvalidAuthOpts, k)
		}
		params[k] = v
	}
	return parts[0], params, nil
}

// Fingerprint identifies a token in logs without revealing it.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:12]
}

const tokenLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// simpleTokens are upstream's: 16 random letters, a dot and the raft index just before the
// Authenticate entry's, held in memory by every member and forgotten after ttl without use.
type simpleTokens struct {
	lg          *slog.Logger
	ttl         time.Duration
	appliedWait func(uint64) <-chan struct{}

	mu      sync.Mutex
	on      bool
	owners  map[string]string    // token -> user
	expires map[string]time.Time // token -> when it lapses unless used
	stop    chan struct{}
	done    chan struct{}
}

func newSimpleTokens(ttl time.Duration, appliedWait func(uint64) <-chan struct{}, lg *slog.Logger) *simpleTokens {
	if ttl <= 0 {
		ttl = 300 * time.Second
	}
	return &simpleTokens{lg: lg, ttl: ttl, appliedWait: appliedWait, owners: map[string]string{}, expires: map[string]time.Time{}}
}

func (t *simpleTokens) Prefix() (string, error) {
	b := make([]byte, 16)
	max := big.NewInt(int64(len(tokenLetters)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b[i] = tokenLetters[n.Int64()]
	}
	return string(b), nil
}

func (t *simpleTokens) Assign(user string, _ uint64, index uint64, prefix string) (string, error) {
	token := prefix + "." + strconv.FormatUint(index, 10)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return token, nil
	}
	t.owners[token] = user
	t.expires[token] = time.Now().Add(t.ttl)
	return token, nil
}

func (t *simpleTokens) Info(ctx context.Context, token string, rev uint64) (*Info, bool) {
	_, idx, ok := strings.Cut(token, ".")
	if !ok || strings.Contains(idx, ".") {
		return nil, false
	}
	index, err := strconv.ParseUint(idx, 10, 64)
	if err != nil {
		return nil, false
	}
	// The token was assigned when its Authenticate entry, the one after index, was applied: a
	// member that has not applied it yet waits (upstream waits only for index itself, and can
	// refuse a fresh token on a member a step behind).
	select {
	case <-t.appliedWait(index + 1):
	case <-ctx.Done():
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	user, ok := t.owners[token]
	if ok {
		t.expires[token] = time.Now().Add(t.ttl)
	}
	return &Info{Username: user, Revision: rev}, ok
}

func (t *simpleTokens) InvalidateUser(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for tok, u := range t.owners {
		if u == name {
			delete(t.owners, tok)
			delete(t.expires, tok)
		}
	}
}

func (t *simpleTokens) Enable() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.on {
		return
	}
	t.on = true
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go t.expire(t.stop, t.done)
}

func (t *simpleTokens) Disable() {
	t.mu.Lock()
	if !t.on {
		t.mu.Unlock()
		return
	}
	t.on = false
	t.owners, t.expires = map[string]string{}, map[string]time.Time{}
	stop, done := t.stop, t.done
	t.mu.Unlock()
	close(stop)
	<-done
}

// expire drops lapsed tokens once a second.
func (t *simpleTokens) expire(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			t.mu.Lock()
			for tok, at := range t.expires {
				if now.After(at) {
					t.lg.Debug("deleted a simple token", "user-name", t.owners[tok], "token-fingerprint", Fingerprint(tok))
					delete(t.owners, tok)
					delete(t.expires, tok)
				}
			}
			t.mu.Unlock()
		}
	}
}
