// Package service is the discovery service's HTTP API: it mints tokens in the etcd cluster that
// serves discovery and shows who registered under them. New members never talk to this API;
// they register through the etcd v3 API of that cluster (--discovery-endpoints).
package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/server/discovery"
)

// Config is what the API needs.
type Config struct {
	Client *clientv3.Client
	// Endpoints are the client URLs members should pass as --discovery-endpoints.
	Endpoints []string
	// DefaultSize is used when /new has no size; MaxSize refuses larger clusters.
	DefaultSize int
	MaxSize     int
	Logger      *slog.Logger
}

// TokenInfo is the JSON answer for a token.
type TokenInfo struct {
	Token      string           `json:"token"`
	Size       int              `json:"size"`
	Endpoints  []string         `json:"endpoints,omitempty"`
	Registered []RegisteredInfo `json:"registered"`
	// Complete is true once Size members registered; InitialCluster is then what they use.
	Complete       bool   `json:"complete"`
	InitialCluster string `json:"initialCluster,omitempty"`
	// Extra are registrations beyond Size: members that were refused as the cluster was full.
	Extra []RegisteredInfo `json:"extra,omitempty"`
}

// RegisteredInfo is one registered member.
type RegisteredInfo struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	PeerURLs       []string `json:"peerURLs"`
	CreateRevision int64    `json:"createRevision"`
}

// Info turns a token state into its JSON form.
func Info(st discovery.State, endpoints []string) TokenInfo {
	info := TokenInfo{Token: st.Token, Size: st.Size, Endpoints: endpoints, Registered: []RegisteredInfo{}, Complete: st.Complete()}
	for i, m := range st.Members {
		r := RegisteredInfo{ID: m.ID(), Name: m.Name(), PeerURLs: m.PeerURLs(), CreateRevision: m.CreateRevision}
		if i < st.Size {
			info.Registered = append(info.Registered, r)
		} else {
			info.Extra = append(info.Extra, r)
		}
	}
	if info.Complete {
		info.InitialCluster, _ = st.InitialCluster()
	}
	return info
}

// NewToken returns a random 128-bit token in hex.
func NewToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Handler serves:
//
//	POST /new?size=N          create a token (201, JSON TokenInfo; text/plain token with ?format=text)
//	GET  /tokens/{token}      the token's registrations (404 when unknown)
//	DELETE /tokens/{token}    remove the token and its registrations
//	GET  /health              200 when the discovery cluster answers
func Handler(cfg Config) http.Handler {
	if cfg.DefaultSize <= 0 {
		cfg.DefaultSize = 3
	}
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = 15
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &api{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /new", a.create)
	mux.HandleFunc("GET /tokens/{token}", a.show)
	mux.HandleFunc("DELETE /tokens/{token}", a.remove)
	mux.HandleFunc("GET /health", a.health)
	return mux
}

type api struct{ cfg Config }

const requestTimeout = 5 * time.Second

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	size := a.cfg.DefaultSize
	if s := r.URL.Query().Get("size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > a.cfg.MaxSize {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("size must be a number from 1 to %d, got %q", a.cfg.MaxSize, s))
			return
		}
		size = n
	}
	token := r.URL.Query().Get("token")
	if token == "" {
		var err error
		if token, err = NewToken(); err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
	} else if err := discovery.ValidToken(token); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	if err := discovery.Create(ctx, a.cfg.Client, token, size); err != nil {
		status := http.StatusServiceUnavailable
		if errors.Is(err, discovery.ErrTokenExists) {
			status = http.StatusConflict
		}
		httpError(w, status, err.Error())
		return
	}
	a.cfg.Logger.Info("created discovery token", "token", token, "size", size)
	if r.URL.Query().Get("format") == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintln(w, token)
		return
	}
	writeJSON(w, http.StatusCreated, TokenInfo{Token: token, Size: size, Endpoints: a.cfg.Endpoints, Registered: []RegisteredInfo{}})
}

// tokenRequest reads and checks the {token} of the path, answering 400 when it is bad.
func tokenRequest(w http.ResponseWriter, r *http.Request) (string, bool) {
	token := r.PathValue("token")
	if err := discovery.ValidToken(token); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return token, true
}

func (a *api) show(w http.ResponseWriter, r *http.Request) {
	token, ok := tokenRequest(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	st, err := discovery.Read(ctx, a.cfg.Client, token)
	switch {
	case errors.Is(err, discovery.ErrSizeNotFound):
		httpError(w, http.StatusNotFound, "no such discovery token: "+token)
		return
	case errors.Is(err, discovery.ErrBadSizeKey):
		httpError(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, Info(st, a.cfg.Endpoints))
}

func (a *api) remove(w http.ResponseWriter, r *http.Request) {
	token, ok := tokenRequest(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	n, err := discovery.Delete(ctx, a.cfg.Client, token)
	switch {
	case err != nil:
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	case n == 0:
		httpError(w, http.StatusNotFound, "no such discovery token: "+token)
		return
	}
	a.cfg.Logger.Info("deleted discovery token", "token", token, "keys", n)
	writeJSON(w, http.StatusOK, map[string]any{"token": token, "deleted": n})
}

func (a *api) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	// A linearizable read proves the discovery cluster has a leader and quorum.
	if _, err := a.cfg.Client.Get(ctx, "health"); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"health": "false", "reason": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"health": "true"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v) //nolint:errcheck // the client went away; nothing to do
}

func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
