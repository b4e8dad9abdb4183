package app

import (
	"github.com/apichain/apichain/pkg/metrics"
	"github.com/apichain/apichain/services/gateway/proxy"
	"github.com/apichain/apichain/services/gateway/readiness"
	"github.com/apichain/apichain/services/gateway/startup"
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// newMetrics is the gateway's registry: the Go and process collectors, the startup timeline,
// the failing webhooks the backends report, every instance's readiness and the NATS connection,
// requests per backend instance, the gRPC calls to the backends and shared watches.
func (g *Gateway) newMetrics(watches *proxy.WatchHub) *prometheus.Registry {
	reg := metrics.NewRegistry()
	reg.MustRegister(startup.NewCollector(g.startupStates), readiness.WebhookCollector(g.registry),
		readiness.LifecycleCollector(g.registry, g.nc), g.grpcClientMetrics)
	g.router.CountRequests(reg)
	watches.Register(reg)
	return reg
}

// newGRPCClientMetrics are grpc-go's standard client metrics (go-grpc-middleware's Prometheus
// provider) for the calls to the backends, under apichain_: started, handled by code, and
// handling time by method.
func newGRPCClientMetrics() *grpcprom.ClientMetrics {
	return grpcprom.NewClientMetrics(grpcprom.WithClientCounterOptions(grpcprom.WithNamespace("apichain")),
		grpcprom.WithClientHandlingTimeHistogram(grpcprom.WithHistogramNamespace("apichain")))
}
