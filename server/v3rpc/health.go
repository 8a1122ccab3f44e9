package v3rpc

import (
	"log/slog"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcHealth is the gRPC health service of one client listener. With the
// StopGRPCServiceOnDefrag gate it reports NOT_SERVING while a defragmentation runs, so load
// balancers that check it send clients elsewhere meanwhile, as upstream.
type grpcHealth struct {
	hs           *health.Server
	lg           *slog.Logger
	stopOnDefrag bool
}

func newGRPCHealth(lg *slog.Logger, stopOnDefrag bool) *grpcHealth {
	h := &grpcHealth{hs: health.NewServer(), lg: lg, stopOnDefrag: stopOnDefrag}
	h.set(healthpb.HealthCheckResponse_SERVING, "")
	return h
}

func (h *grpcHealth) set(st healthpb.HealthCheckResponse_ServingStatus, reason string) {
	if st == healthpb.HealthCheckResponse_SERVING {
		h.lg.Info("grpc service status changed", "service", "", "status", st.String())
	} else {
		h.lg.Warn("grpc service status changed", "service", "", "status", st.String(), "reason", reason)
	}
	h.hs.SetServingStatus("", st)
}

func (h *grpcHealth) defragStarted() {
	if h.stopOnDefrag {
		h.set(healthpb.HealthCheckResponse_NOT_SERVING, "defrag is active")
	}
}

func (h *grpcHealth) defragFinished() {
	if h.stopOnDefrag {
		h.set(healthpb.HealthCheckResponse_SERVING, "")
	}
}
