package v3rpc

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"testing"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestCallMetricsMatchTheProvider serves the same calls through grpc-ecosystem's prometheus
// provider (what upstream registers) and CallMetrics, on one real gRPC server over loopback,
// and compares the two registries' series: names, help, labels and counts.
func TestCallMetricsMatchTheProvider(t *testing.T) {
	for _, extensive := range []bool{false, true} {
		t.Run(fmt.Sprintf("extensive=%v", extensive), func(t *testing.T) {
			var opts []grpcprom.ServerMetricsOption
			if extensive {
				opts = append(opts, grpcprom.WithServerHandlingTimeHistogram())
			}
			theirs, ours := grpcprom.NewServerMetrics(opts...), NewCallMetrics(extensive)
			theirReg, ourReg := prometheus.NewRegistry(), prometheus.NewRegistry()
			theirReg.MustRegister(theirs)
			ourReg.MustRegister(ours)

			// The outermost interceptor says when a stream has ended and both have counted it.
			streamEnded := make(chan struct{}, 1)
			ended := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				err := h(srv, ss)
				streamEnded <- struct{}{}
				return err
			}
			gs := grpc.NewServer(
				grpc.ChainUnaryInterceptor(theirs.UnaryServerInterceptor(), ours.UnaryServerInterceptor()),
				grpc.ChainStreamInterceptor(ended, theirs.StreamServerInterceptor(), ours.StreamServerInterceptor()))
			hs := health.NewServer()
			hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
			healthpb.RegisterHealthServer(gs, hs)
			theirs.InitializeMetrics(gs)
			ours.Initialize(gs)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go gs.Serve(l)
			defer gs.Stop()
			conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c := healthpb.NewHealthClient(conn)
			ctx := context.Background()

			for range 3 { // OK
				if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: "up"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: "missing"}); status.Code(err) != codes.NotFound {
				t.Fatalf("Check(missing) = %v, want NotFound", err)
			}
			// A server stream: two messages sent, then cancelled by the client.
			wctx, cancel := context.WithCancel(ctx)
			w, err := c.Watch(wctx, &healthpb.HealthCheckRequest{Service: "up"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Recv(); err != nil {
				t.Fatal(err)
			}
			hs.SetServingStatus("up", healthpb.HealthCheckResponse_NOT_SERVING)
			if _, err := w.Recv(); err != nil {
				t.Fatal(err)
			}
			cancel()
			<-streamEnded

			got, wantAll := series(t, ourReg), series(t, theirReg)
			if strings.Join(got, "\n") != strings.Join(wantAll, "\n") {
				t.Errorf("series differ:\nours:\n%s\n\nthe provider's:\n%s", strings.Join(got, "\n"), strings.Join(wantAll, "\n"))
			}
			for _, s := range []string{
				`grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 3`,
				`grpc_server_handled_total{grpc_code="NotFound",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 1`,
				`grpc_server_msg_sent_total{grpc_method="Watch",grpc_service="grpc.health.v1.Health",grpc_type="server_stream"} 2`,
				`grpc_server_handled_total{grpc_code="Canceled",grpc_method="Watch",grpc_service="grpc.health.v1.Health",grpc_type="server_stream"} 1`,
			} {
				if !slices.Contains(got, s) {
					t.Errorf("missing %s", s)
				}
			}
			if extensive && !slices.Contains(got, `grpc_server_handling_seconds_count{grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 4`) {
				t.Errorf("no handling-time histogram of 4 Check calls:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}

// series are a registry's samples as sorted lines, with each family's help; a histogram is
// its count and bucket bounds (the times themselves differ between the two).
func series(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		out = append(out, fmt.Sprintf("# %s %s %s", mf.GetName(), mf.GetType(), mf.GetHelp()))
		for _, m := range mf.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			ls := "{" + strings.Join(labels, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, fmt.Sprintf("%s%s %g", mf.GetName(), ls, m.Counter.GetValue()))
			case dto.MetricType_HISTOGRAM:
				var bounds []string
				for _, b := range m.Histogram.Bucket {
					bounds = append(bounds, fmt.Sprint(b.GetUpperBound()))
				}
				out = append(out, fmt.Sprintf("%s_count%s %d", mf.GetName(), ls, m.Histogram.GetSampleCount()),
					fmt.Sprintf("%s_buckets%s %s", mf.GetName(), ls, strings.Join(bounds, " ")))
			}
		}
	}
	sort.Strings(out)
	return out
}
