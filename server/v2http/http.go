package v2http

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/etcdserver"
	"etcdx/server/membership"
	"etcdx/server/v2auth"
	"etcdx/server/v2store"
)

// Paths upstream serves.
const (
	keysPrefix     = "/v2/keys"
	membersPrefix  = "/v2/members"
	machinesPrefix = "/v2/machines"
	statsPrefix    = "/v2/stats"
	authPrefix     = "/v2/auth"
)

// Server is what the v2 API needs of a member.
type Server interface {
	V2Do(ctx context.Context, r pb.Request) (etcdserver.V2Response, error)
	V2StoreStats() v2store.Stats
	ID() uint64
	ClusterID() uint64
	Leader() uint64
	Members() []membership.Member
	AddMember(ctx context.Context, peerURLs []string, learner bool) (*membership.Member, []membership.Member, error)
	RemoveMember(ctx context.Context, id uint64) ([]membership.Member, error)
	UpdateMember(ctx context.Context, id uint64, peerURLs []string) ([]membership.Member, error)
}

// Options are the member's settings the API depends on.
type Options struct {
	// RequestTimeout bounds each request the API sends to the member.
	RequestTimeout time.Duration
	// ClientCertAuth: a verified client certificate's common name names the v2 user when a
	// request has no basic-auth credentials (--client-cert-auth).
	ClientCertAuth bool
	// Stats answers /v2/stats/self and /v2/stats/leader.
	Stats StatsSource
	Log   *slog.Logger
}

// api holds the handlers' shared parts.
type api struct {
	s    Server
	opt  Options
	auth *v2auth.Store
	log  *slog.Logger
}

// Register adds the v2 API's paths to mux.
func Register(mux *http.ServeMux, s Server, opt Options) {
	a := &api{s: s, opt: opt, log: opt.Log}
	a.auth = v2auth.NewStore(func(ctx context.Context, r pb.Request) (*v2store.Event, error) {
		resp, err := s.V2Do(ctx, r)
		return resp.Event, err
	}, opt.Log, a.timeout)
	mux.HandleFunc(keysPrefix, a.keys)
	mux.HandleFunc(keysPrefix+"/", a.keys)
	mux.HandleFunc(membersPrefix, a.members)
	mux.HandleFunc(membersPrefix+"/", a.members)
	mux.HandleFunc(machinesPrefix, a.machines)
	mux.HandleFunc(statsPrefix+"/store", a.storeStats)
	mux.HandleFunc(statsPrefix+"/self", a.selfStats)
	mux.HandleFunc(statsPrefix+"/leader", a.leaderStats)
	mux.HandleFunc(authPrefix+"/roles", a.roles)
	mux.HandleFunc(authPrefix+"/roles/", a.roles)
	mux.HandleFunc(authPrefix+"/users", a.users)
	mux.HandleFunc(authPrefix+"/users/", a.users)
	mux.HandleFunc(authPrefix+"/enable", a.enable)
}

func (a *api) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), a.opt.RequestTimeout)
}

// allow answers 405 with upstream's Allow header (methods joined by a bare comma) unless r uses
// one of methods.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ","))
	http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	return false
}

// httpError is the body of the API's errors outside /v2/keys: {"message": ...}.
type httpError struct {
	Message string `json:"message"`
	status  int
}

func (e httpError) Error() string { return e.Message }

func (e httpError) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	b, _ := json.Marshal(e)
	w.Write(b)
}

// writeError answers err as upstream's handlers do: a v2 store error in its own form, an auth
// refusal with its status, anything else a 500 that names no internals (the member logs it).
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var se *v2store.Error
	var ae v2auth.Error
	var he httpError
	switch {
	case errors.As(err, &se):
		se.WriteTo(w)
	case errors.As(err, &ae):
		httpError{Message: ae.Msg, status: ae.Status}.write(w)
	case errors.As(err, &he):
		he.write(w)
	default:
		a.log.Warn("unexpected v2 response error", "remote-addr", r.RemoteAddr, "internal-server-error", err.Error())
		httpError{Message: "Internal Server Error", status: http.StatusInternalServerError}.write(w)
	}
}

func writeNoAuth(w http.ResponseWriter) {
	httpError{Message: "Insufficient credentials", status: http.StatusUnauthorized}.write(w)
}

func (a *api) clusterHeader(w http.ResponseWriter) {
	w.Header().Set("X-Etcd-Cluster-ID", hexID(a.s.ClusterID()))
}
