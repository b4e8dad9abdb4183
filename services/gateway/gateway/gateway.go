package gateway

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"strconv"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/services/gateway/filters"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// Gateway is the front door process.
type Gateway struct {
	Server *server.Server
	Log    *slog.Logger

	opts       *Options
	pki        *certs.PKI
	ln         net.Listener
	registry   *lifecycle.Registry
	pool       *connPool
	router     *router
	grpc       *grpc.Server
	health     *health.Server
	instance   lifecycle.Instance
	metrics    *prometheus.Registry
	kubeconfig string
	authn      filters.Authentication
	authorizer filters.Authorizer
}

// New builds the gateway and binds its port; the admin kubeconfig is written before serving.
func New(opts *Options, log *slog.Logger) (*Gateway, error) {
	log = log.With("service", "gateway", "instance", opts.InstanceID)
	srv := server.New("gateway", opts.Generic, log)
	srv.MarkPhase("config")
	g := &Gateway{Server: srv, Log: log, opts: opts, registry: lifecycle.NewRegistry(opts.LifecycleTTL), health: health.NewServer()}

	hosts := append([]string{"apichain", "kubernetes", "kubernetes.default"}, opts.ExternalHosts...)
	pki, err := certs.EnsurePKI(opts.DataDir, hosts, []string{opts.BackendServerName})
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	g.pki = pki
	serving, err := g.servingTLS()
	if err != nil {
		return nil, err
	}
	backendTLS, err := certs.ClientTLSConfig(pick(opts.BackendCAFile, pki.CAFile),
		pick(opts.BackendClientCertFile, pki.GatewayClientCertFile), pick(opts.BackendClientKeyFile, pki.GatewayClientKeyFile),
		opts.BackendServerName)
	if err != nil {
		return nil, fmt.Errorf("backend client TLS: %w", err)
	}
	g.pool = newConnPool(backendTLS)
	g.router = &router{reg: g.registry, pool: g.pool}

	g.ln, err = net.Listen("tcp", net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	g.instance = lifecycle.Instance{Service: "gateway", InstanceID: opts.InstanceID, Address: g.ln.Addr().String()}
	if err := g.writeKubeconfig(); err != nil {
		g.ln.Close()
		return nil, err
	}

	handler, err := g.buildHandler()
	if err != nil {
		g.ln.Close()
		return nil, err
	}
	srv.AddTransport("https", server.NewHTTPTransport(handler, serving, log), g.ln)
	srv.DeferMuxAndDiscoveryComplete()
	if err := g.addHooks(); err != nil {
		g.ln.Close()
		return nil, err
	}
	return g, nil
}

func pick(given, generated string) string {
	if given != "" {
		return given
	}
	return generated
}

func (g *Gateway) servingTLS() (*tls.Config, error) {
	pool, err := certs.PoolFromFile(pick(g.opts.ClientCAFile, g.pki.CAFile))
	if err != nil {
		return nil, err
	}
	return certs.ServerTLSConfig(pick(g.opts.TLSCertFile, g.pki.ServingCertFile), pick(g.opts.TLSKeyFile, g.pki.ServingKeyFile), pool, false)
}

// URL is the gateway's HTTPS URL on loopback.
func (g *Gateway) URL() string {
	port := g.ln.Addr().(*net.TCPAddr).Port
	return "https://127.0.0.1:" + strconv.Itoa(port)
}

// KubeconfigPath is where the admin kubeconfig was written.
func (g *Gateway) KubeconfigPath() string { return g.kubeconfig }

func (g *Gateway) writeKubeconfig() error {
	ca, err := readFile(g.pki.CAFile)
	if err != nil {
		return err
	}
	cert, err := readFile(g.pki.AdminCertFile)
	if err != nil {
		return err
	}
	key, err := readFile(g.pki.AdminKeyFile)
	if err != nil {
		return err
	}
	g.kubeconfig = filepath.Join(g.opts.DataDir, "admin.kubeconfig")
	return certs.WriteKubeconfig(g.kubeconfig, g.URL(), ca, cert, key)
}

func (g *Gateway) buildHandler() (http.Handler, error) {
	g.grpc = grpc.NewServer()
	resourcev1.RegisterResourceServiceServer(g.grpc, &resourceProxy{rt: g.router})
	lapi := &lifecycleAPI{g: g}
	lifecyclev1.RegisterLifecycleServiceServer(g.grpc, lapi)
	healthpb.RegisterHealthServer(g.grpc, g.health)
	reflection.Register(g.grpc)

	g.metrics = prometheus.NewRegistry()
	g.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	requests := newRequestMetrics(g.metrics)
	g.metrics.MustRegister(newStartupCollector(g))
	g.router.perInstance = newBackendRequestsMetric(g.metrics)

	rest := runtime.NewServeMux()
	if err := lifecyclev1.RegisterLifecycleServiceHandlerServer(context.Background(), rest, lapi); err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	g.Server.InstallHealthHandlers(mux, g.remoteChecks)
	mux.HandleFunc("GET /version", serveVersion)
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/debug/lifecycle/", rest)
	mux.HandleFunc("GET /debug/startup", g.serveStartup)
	mux.HandleFunc("/", g.serveDelegated)

	authn := filters.Authentication{Authenticators: []filters.Authenticator{filters.X509Authenticator()}}
	if g.opts.TokenAuthFile != "" {
		tf, err := filters.LoadTokenFile(g.opts.TokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("--token-auth-file: %w", err)
		}
		authn.Authenticators = append(authn.Authenticators, tf)
	}
	if g.opts.AnonymousAuth {
		authn.AnonymousPaths = []string{"/healthz", "/livez", "/readyz", "/version"}
	}
	g.authn, g.authorizer = authn, filters.AlwaysAllow{}
	var retryAfter <-chan struct{}
	if g.opts.Generic.ShutdownSendRetryAfter {
		retryAfter = g.Server.Signals().AfterShutdownDelayDuration.Signaled()
	}
	chain := filters.BuildHandlerChain(requests.instrument(grpcHandler(g.grpc, mux)), filters.ChainConfig{
		Log:                         g.Log,
		RequestTimeout:              g.opts.RequestTimeout,
		MaxRequestsInFlight:         g.opts.MaxRequestsInFlight,
		MaxMutatingRequestsInFlight: g.opts.MaxMutatingRequestsInFlight,
		Authentication:              authn,
		Authorizer:                  g.authorizer,
		HSTSDirectives:              g.opts.HSTSDirectives,
		InFlight:                    &g.Server.InFlight,
		RetryAfter:                  retryAfter,
	})
	return chain, nil
}

// addHooks registers the gateway's own post-start hooks.
func (g *Gateway) addHooks() error {
	if err := g.Server.AddPostStartHook("start-lifecycle-watcher", func(ctx context.Context) error {
		return g.waitFirstState(ctx)
	}); err != nil {
		return err
	}
	return g.Server.AddPostStartHook("delegation-chain-complete", func(ctx context.Context) error {
		if err := waitFor(ctx, g.registry, g.router.complete); err != nil {
			return err
		}
		g.Server.Signals().MuxAndDiscoveryComplete.Signal()
		return nil
	})
}

// Snapshot is the gateway's own lifecycle state.
func (g *Gateway) Snapshot() *lifecyclev1.InstanceState {
	return lifecycle.Snapshot(g.Server, g.instance)
}

// Run serves until ctx is done, then shuts down gracefully.
func (g *Gateway) Run(ctx context.Context) error {
	nc, err := lifecycle.Connect(g.opts.NATSURL, "gateway/"+g.opts.InstanceID)
	if err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	defer nc.Close()
	defer g.pool.closeAll()

	bg, stopBackground := context.WithCancel(context.Background())
	var wg errgroup.Group
	wg.Go(func() error { lifecycle.WatchNATS(bg, nc, g.opts.LifecycleTTL, g.registry, g.Log); return nil })
	wg.Go(func() error {
		lifecycle.PollGRPC(bg, g.registry, g.staticAddresses, g.dial, g.opts.LifecycleTTL/5)
		return nil
	})
	pub := lifecycle.NewPublisher(nc, lifecycle.Key("gateway", g.opts.InstanceID), g.opts.LifecycleTTL, g.Snapshot, g.Log)
	g.Server.OnChange(pub.Notify)
	g.Server.OnChange(g.updateHealth)
	g.registry.OnChange(g.retainConns)
	wg.Go(func() error { pub.Run(bg); return nil })

	g.Log.Info("Serving securely on "+g.ln.Addr().String(), "url", g.URL(), "kubeconfig", g.kubeconfig)
	err = g.Server.Run(ctx)
	stopBackground()
	_ = wg.Wait()
	return err
}

func (g *Gateway) staticAddresses() []string {
	var out []string
	out = append(out, g.opts.AggregatorAddresses...)
	out = append(out, g.opts.CoreAddresses...)
	return append(out, g.opts.ExtensionsAddresses...)
}

func (g *Gateway) dial(addr string) (grpc.ClientConnInterface, error) { return g.pool.get(addr) }

// retainConns closes connections to instances that are gone.
func (g *Gateway) retainConns() {
	keep := map[string]bool{}
	for _, st := range g.registry.Instances() {
		keep[st.GetAddress()] = true
	}
	for _, a := range g.staticAddresses() {
		keep[a] = true
	}
	g.pool.retain(keep)
}

func (g *Gateway) updateHealth() {
	sig := g.Server.Signals()
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if sig.HasBeenReady.IsSignaled() && !sig.ShutdownInitiated.IsSignaled() {
		st = healthpb.HealthCheckResponse_SERVING
	}
	g.health.SetServingStatus("", st)
	g.health.SetServingStatus("gateway", st)
}
