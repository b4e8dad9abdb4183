package server

import (
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// MirrorHealth drives a grpc.health.v1 server from this server's lifecycle, for the
// gateway's fallback and for container healthchecks: SERVING ("" and service) once the
// server has been ready, NOT_SERVING before and from the start of shutdown.
func (s *Server) MirrorHealth(h *health.Server, service string) {
	update := func() {
		st := healthpb.HealthCheckResponse_NOT_SERVING
		if s.signals.HasBeenReady.IsSignaled() && !s.signals.ShutdownInitiated.IsSignaled() {
			st = healthpb.HealthCheckResponse_SERVING
		}
		h.SetServingStatus("", st)
		h.SetServingStatus(service, st)
	}
	s.OnChange(update)
	update()
}
