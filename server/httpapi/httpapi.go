package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	gw "go.etcd.io/etcd/api/v3/etcdserverpb/gw"
	electiongw "go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb/gw"
	lockgw "go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb/gw"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"etcdx/pkg/buildinfo"
	"etcdx/server/v2http"
	"etcdx/server/v3rpc"
	"etcdx/server/version"
)

// NotDecided is reported as the cluster version before the cluster has agreed on one.
const NotDecided = "not_decided"

// Versions is the /version body.
type Versions struct {
	Server  string `json:"etcdserver"`
	Cluster string `json:"etcdcluster"`
	Storage string `json:"storage,omitempty"`
	// Implementation is ours alone (upstream's readers ignore a field they do not know): this
	// implementation's name, release and commit.
	Implementation string `json:"implementation,omitempty"`
}

// VersionSource reports the replicated cluster version and the local storage version, read
// together (the storage version follows the cluster version in one apply: read apart, an answer
// could show the new storage version beside the old cluster version); zero levels mean "not
// decided" and "not reported" (a 3.5 binary has no storage version).
type VersionSource interface {
	Versions() (cluster, storage version.Level)
	// Version is the server version the member runs as (its level's upstream release): what
	// its binary's build says, except in the simulation, where members of every level share
	// one process.
	Version() string
}

// allowOnly answers 405 with an Allow header, as upstream, unless r uses one of methods.
func allowOnly(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	if slices.Contains(methods, r.Method) {
		return true
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	return false
}

// VersionHandler answers /version.
func VersionHandler(vs VersionSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowOnly(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		v := Versions{Server: vs.Version(), Cluster: NotDecided, Implementation: buildinfo.Identity()}
		cv, st := vs.Versions()
		if !cv.IsZero() {
			v.Cluster = cv.Full()
		}
		if !st.IsZero() {
			v.Storage = st.Full()
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(v) // no trailing newline, as upstream writes it
		w.Write(b)
	})
}

// Options choose the client listener's HTTP APIs.
type Options struct {
	// Gateway serves the gRPC JSON gateway under /v3/ (--enable-grpc-gateway).
	Gateway bool
	// V2 serves the v2 API (--enable-v2, level 3.5 only).
	V2 bool
	// ClientCertAuth: a client certificate's common name names the v2 user (--client-cert-auth).
	ClientCertAuth bool
}

// Handler is the client listener's HTTP side. conn is a client connection to this member's own
// gRPC server, used by the JSON gateway.
func Handler(s Member, conn *grpc.ClientConn, opt Options) (http.Handler, error) {
	mux := http.NewServeMux()
	addMetrics(mux, s)
	addHealth(mux, s, opt.V2)
	mux.Handle("/version", VersionHandler(s))
	mux.Handle("/debug/vars", debugVars(s))
	if opt.V2 {
		v2http.Register(mux, s, v2http.Options{RequestTimeout: s.RequestTimeout(), ClientCertAuth: opt.ClientCertAuth,
			Stats: s, Log: s.Logger()})
	}
	if !opt.Gateway {
		return mux, nil // --enable-grpc-gateway=false
	}
	gwmux := runtime.NewServeMux(runtime.WithMetadata(func(context.Context, *http.Request) metadata.MD {
		// The gateway's connection carries this member's own certificate: the mark keeps its
		// common name from being taken for the caller's (v3rpc.GatewayMark).
		return metadata.Pairs(v3rpc.GatewayMark, "1")
	}), runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.HTTPBodyMarshaler{Marshaler: gatewayJSON()}),
		runtime.WithErrorHandler(gatewayError))
	ctx := context.Background()
	for _, reg := range []func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
		gw.RegisterKVHandler, gw.RegisterWatchHandler, gw.RegisterLeaseHandler,
		gw.RegisterClusterHandler, gw.RegisterMaintenanceHandler, gw.RegisterAuthHandler,
		lockgw.RegisterLockHandler, electiongw.RegisterElectionHandler, // /v3/lock/*, /v3/election/*
	} {
		if err := reg(ctx, gwmux, conn); err != nil {
			return nil, fmt.Errorf("register gateway: %w", err)
		}
	}
	mux.Handle("/v3/", gwmux)
	return mux, nil
}

// gatewayJSON is how the gateway reads request bodies and writes answers: upstream's field
// names, unknown fields ignored, and answers without spaces (compactJSON).
func gatewayJSON() *compactJSON {
	return &compactJSON{runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: false},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true},
	}}
}

// compactJSON writes protojson's output without its whitespace. protojson puts a space after
// some separators or not depending on the binary (on purpose, so nobody relies on its bytes);
// upstream 3.5's gateway and upstream 3.7.3's build write none, and scripts and upstream's own
// tests match the compact form.
type compactJSON struct{ runtime.JSONPb }

func (c *compactJSON) Marshal(v any) ([]byte, error) {
	b, err := c.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return b, nil
	}
	return out.Bytes(), nil
}

// NewEncoder writes each value as Marshal does (watch streams and the like), one per line as
// the embedded encoder does.
func (c *compactJSON) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := c.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
}

// AddMetrics adds /metrics, /health, /livez and /readyz (what the metrics listener serves too).
func AddMetrics(mux *http.ServeMux, s Health) {
	addMetrics(mux, s)
	addHealth(mux, s, false)
}

func addMetrics(mux *http.ServeMux, s Health) {
	// Instrumented as upstream's handler is: promhttp_metric_handler_requests_{total,in_flight}
	// (every listener serving /metrics shares the two).
	reg := s.Config().Registry
	mux.Handle("/metrics", promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
}

// gatewayError writes a failed call's answer: from 3.6 as upstream's grpc-gateway v2 writes it
// ({"code","message"}), at 3.5 as upstream 3.5's v1 gateway did, with the message also under
// "error" first (scripts and upstream 3.5's tests look for it).
func gatewayError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	var hs *runtime.HTTPStatusError
	if buildinfo.AtLeast("3.6") || errors.As(err, &hs) {
		runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
		return
	}
	st := status.Convert(err)
	body, _ := json.Marshal(struct {
		Error   string `json:"error"`
		Code    int32  `json:"code"`
		Message string `json:"message"`
	}{st.Message(), int32(st.Code()), st.Message()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(runtime.HTTPStatusFromCode(st.Code()))
	w.Write(body)
}

// PeerHandler is what a member serves on its peer URLs, as upstream's peer listener: the peer
// protocol (peer: etcdserver's PeerHandler) and /version, which members of 3.5 (which publish
// no version) are asked their version on.
func PeerHandler(v VersionSource, peer http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/version", VersionHandler(v))
	for _, p := range []string{"/downgrade/", "/raft", "/raft/", "/leases", "/leases/", "/members", "/members/"} {
		mux.Handle(p, peer)
	}
	return mux
}
