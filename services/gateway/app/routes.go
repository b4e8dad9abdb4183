package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/pprof"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/healthz"
	"github.com/apichain/apichain/pkg/metrics"
	"github.com/apichain/apichain/pkg/version"
	"github.com/apichain/apichain/services/gateway/readiness"
	"github.com/apichain/apichain/services/gateway/startup"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// localRoutes are what the gateway answers itself (health, /version, /metrics, the debug
// endpoints, OIDC discovery); everything else is delegated down the chain.
func (g *Gateway) localRoutes() (*http.ServeMux, error) {
	mux := http.NewServeMux()
	g.Server.InstallHealthHandlers(mux, func() []healthz.Checker { return readiness.RemoteChecks(g.registry) })
	mux.HandleFunc("GET /version", serveVersion())
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{g.metrics, metrics.KubeLibraries}, promhttp.HandlerOpts{}))
	if err := g.installDebug(mux); err != nil {
		return nil, err
	}
	if config, jwks, ok := g.saTokens.Discovery(g.externalURL()); ok {
		mux.Handle("GET /.well-known/openid-configuration", config)
		mux.Handle("GET /openid/v1/jwks", jwks)
	}
	mux.HandleFunc("/", g.serveDelegated)
	return mux, nil
}

// installDebug serves /debug/: Go's profiles, the lifecycle state (REST transcoding of the
// lifecycle service by grpc-gateway), the startup timeline and priority and fairness's dumps.
// Authorization decides who may read them, as for any non-resource URL.
func (g *Gateway) installDebug(mux *http.ServeMux) error {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	rest := runtime.NewServeMux()
	if err := lifecyclev1.RegisterLifecycleServiceHandlerServer(context.Background(), rest, &lifecycleAPI{g: g}); err != nil {
		return err
	}
	mux.Handle("/debug/lifecycle/", rest)
	mux.Handle("GET /debug/startup", startup.Handler(g.startupStates, g.Log))
	if g.apf != nil {
		mux.Handle("/debug/api_priority_and_fairness/", g.apf.Debug())
	}
	return nil
}

// serveVersion answers /version with this binary's version, read once.
func serveVersion() http.HandlerFunc {
	data, _ := json.MarshalIndent(version.Get(), "", "  ")
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}
}
