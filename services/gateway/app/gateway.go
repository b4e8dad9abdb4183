package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/controller/namespace"
	"github.com/apichain/apichain/pkg/healthz"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/routing"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/services/gateway/apf"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/apichain/apichain/services/gateway/authn"
	"github.com/apichain/apichain/services/gateway/authz"
	"github.com/apichain/apichain/services/gateway/connect"
	"github.com/apichain/apichain/services/gateway/discovery"
	"github.com/apichain/apichain/services/gateway/filters"
	"github.com/apichain/apichain/services/gateway/loopback"
	"github.com/apichain/apichain/services/gateway/proxy"
	"github.com/apichain/apichain/services/gateway/readiness"
	"github.com/apichain/apichain/services/gateway/reviews"
	"github.com/apichain/apichain/services/gateway/serviceaccount"
	"github.com/apichain/apichain/services/gateway/startup"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Gateway is the front door process.
type Gateway struct {
	Server *server.Server
	Log    *slog.Logger

	opts       *Options
	pki        *certs.PKI
	nc         *nats.Conn
	ln         net.Listener
	registry   *lifecycle.Registry
	pool       *routing.Pool
	router     *routing.Router
	grpc       *grpc.Server
	health     *health.Server
	instance   lifecycle.Instance
	metrics    *prometheus.Registry
	kubeconfig string
	authorizer authz.Union
	rbacSync   *authz.Sync // nil unless RBAC is an authorization mode
	saObjects  *serviceaccount.Objects
	connect    *connect.Handler
	saTokens   *serviceaccount.Tokens
	auditor    *audit.Auditor // nil when auditing is off
	auditLog   *audit.LogBackend
	auditNATS  *audit.NATSBackend
	rest       *proxy.REST
	documents  *discovery.Documents
	aggregated *proxy.Aggregated
	reviews    *reviews.Handler
	apf        *apf.Controller // nil with --enable-priority-and-fairness=false
	loopback   *loopback.Client
}

// New builds the gateway with pki's certificates (unless the options name others) and binds
// its port; the admin kubeconfig is written before serving. Lifecycle state travels over nc.
func New(opts *Options, pki *certs.PKI, nc *nats.Conn, log *slog.Logger) (*Gateway, error) {
	log = log.With("service", topology.Gateway, "instance", opts.Lifecycle.InstanceID)
	srv := server.New(topology.Gateway, opts.Generic, log)
	g := &Gateway{Server: srv, Log: log, opts: opts, pki: pki, nc: nc,
		registry: lifecycle.NewRegistry(opts.Lifecycle.TTL), health: health.NewServer()}

	opts.RequestHeader.Complete(pki)
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
	g.pool = routing.NewPool(credentials.NewTLS(backendTLS), grpc.WithChainUnaryInterceptor(proxy.CollectWarnings))
	g.router = routing.NewRouter(g.registry, g.pool)

	g.ln, err = net.Listen("tcp", net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	// A gateway's published address is where the cluster reaches it: the default/kubernetes
	// endpoints are made of them.
	address := g.ln.Addr().String()
	if opts.AdvertiseAddress != "" {
		address = net.JoinHostPort(opts.AdvertiseAddress, strconv.Itoa(g.ln.Addr().(*net.TCPAddr).Port))
	}
	g.instance = lifecycle.Instance{Service: topology.Gateway, InstanceID: opts.Lifecycle.InstanceID, Address: address}
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

// servingTLS asks clients for certificates of the client CA and of the requestheader CA (a
// front proxy's), as kube-apiserver does; authentication decides what each is worth.
func (g *Gateway) servingTLS() (*tls.Config, error) {
	cfg, err := g.servingOptions().TLSConfig(false)
	if err != nil || g.opts.RequestHeader.ClientCAFile == "" {
		return cfg, err
	}
	pem, err := os.ReadFile(g.opts.RequestHeader.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
	}
	if cfg.ClientCAs == nil {
		cfg.ClientCAs = x509.NewCertPool()
		cfg.ClientAuth = tls.RequestClientCert
	}
	if !cfg.ClientCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--requestheader-client-ca-file: no PEM certificate in %s", g.opts.RequestHeader.ClientCAFile)
	}
	return cfg, nil
}

// servingOptions are the serving files: the given ones, or the generated.
func (g *Gateway) servingOptions() certs.ServingOptions {
	generated := certs.ServingOptions{CertFile: g.pki.ServingCertFile, KeyFile: g.pki.ServingKeyFile, ClientCAFile: g.pki.CAFile}
	return g.opts.Serving.Or(generated)
}

// URL is the gateway's HTTPS URL on loopback.
func (g *Gateway) URL() string {
	port := g.ln.Addr().(*net.TCPAddr).Port
	return "https://127.0.0.1:" + strconv.Itoa(port)
}

// externalURL is how clients outside reach the gateway: the first --external-hostname, or the
// loopback URL.
func (g *Gateway) externalURL() string {
	if len(g.opts.ExternalHosts) == 0 {
		return g.URL()
	}
	port := g.ln.Addr().(*net.TCPAddr).Port
	return "https://" + net.JoinHostPort(g.opts.ExternalHosts[0], strconv.Itoa(port))
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
	var err error
	if g.loopback, err = loopback.New(); err != nil {
		return nil, err
	}
	if g.opts.EnablePriorityAndFairness {
		if g.apf, err = apf.New(g.opts.MaxRequestsInFlight+g.opts.MaxMutatingRequestsInFlight, g.loopback.Config("apichain-gateway/loopback")); err != nil {
			return nil, err
		}
	}
	rbac := &authz.RBAC{}
	if g.authorizer, err = authz.New(g.opts.AuthorizationModes, rbac); err != nil {
		return nil, fmt.Errorf("--authorization-mode: %w", err)
	}
	if slices.Contains(g.opts.AuthorizationModes, authz.ModeRBAC) {
		g.rbacSync = authz.NewSync(rbac, routing.NewClient(g.router), g.Log)
	}
	g.grpc = grpc.NewServer(g.grpcInterceptors()...)
	watches := proxy.NewWatchHub(g.router)
	resourcev1.RegisterResourceServiceServer(g.grpc, proxy.NewGRPC(g.router, g.opts.AuthorizationModes, watches))
	lapi := &lifecycleAPI{g: g}
	lifecyclev1.RegisterLifecycleServiceServer(g.grpc, lapi)
	healthpb.RegisterHealthServer(g.grpc, g.health)
	reflection.Register(g.grpc)

	g.metrics = prometheus.NewRegistry()
	g.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g.metrics.MustRegister(startup.NewCollector(g.startupStates), readiness.WebhookCollector(g.registry))
	g.router.CountRequests(g.metrics)
	watches.Register(g.metrics)

	rest := runtime.NewServeMux()
	if err := lifecyclev1.RegisterLifecycleServiceHandlerServer(context.Background(), rest, lapi); err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	g.Server.InstallHealthHandlers(mux, func() []healthz.Checker { return readiness.RemoteChecks(g.registry) })
	mux.HandleFunc("GET /version", serveVersion())
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{g.metrics, kubeLibraryMetrics}, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/debug/lifecycle/", rest)
	mux.Handle("GET /debug/startup", startup.Handler(g.startupStates, g.Log))
	mux.HandleFunc("/", g.serveDelegated)

	clientCAs, err := certs.PoolFromFile(g.servingOptions().ClientCAFile)
	if err != nil {
		return nil, err
	}
	g.saObjects = serviceaccount.NewObjects(routing.NewClient(g.router), g.Log)
	g.connect = &connect.Handler{Objects: routing.NewClient(g.router)}
	g.saTokens, err = serviceaccount.New(g.opts.ServiceAccounts.Or(g.pki), g.saObjects, g.Log)
	if err != nil {
		return nil, err
	}
	auds := g.saTokens.APIAudiences()
	bearer := authn.NewBearer(auds)
	if g.opts.TokenAuthFile != "" {
		tf, err := authn.LoadTokenFile(g.opts.TokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("--token-auth-file: %w", err)
		}
		bearer.Tokens = append(bearer.Tokens, authn.AudienceAgnostic(auds, tf))
	}
	bearer.Tokens = append([]authn.TokenAuthenticator{authn.StaticToken{Token: g.loopback.Token(), User: g.loopback.User()}}, append(bearer.Tokens, g.saTokens)...)
	var pf func(http.Handler) http.Handler
	if g.apf != nil {
		pf = func(h http.Handler) http.Handler { return g.apf.Filter(h, g.opts.RequestTimeout/4) }
		mux.Handle("/debug/api_priority_and_fairness/", g.apf.Debug())
	}
	authentication := authn.Authentication{Authenticators: []authn.Authenticator{authn.X509Authenticator(clientCAs), bearer},
		Anonymous: g.opts.AnonymousAuth}
	if rh := &g.opts.RequestHeader; rh.ClientCAFile != "" {
		roots, err := certs.PoolFromFile(rh.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
		}
		// First, as in kube: a front proxy's certificate also verifies as a client's.
		authentication.Authenticators = append([]authn.Authenticator{authn.RequestHeaderAuthenticator(rh, roots)}, authentication.Authenticators...)
	}
	if config, jwks, ok := g.saTokens.Discovery(g.externalURL()); ok {
		mux.Handle("GET /.well-known/openid-configuration", config)
		mux.Handle("GET /openid/v1/jwks", jwks)
	}
	g.rest, g.documents = proxy.NewREST(g.router, g.opts.AuthorizationModes, watches), discovery.NewDocuments(g.router)
	discoveryv1.RegisterDiscoveryServiceServer(g.grpc, discovery.NewGRPC(g.documents)) // the whole chain's, merged as over REST
	g.aggregated = proxy.NewAggregated(g.router, g.opts.AuthorizationModes)
	g.reviews = &reviews.Handler{Tokens: bearer, APIAudiences: auds, Authorizer: g.authorizer}
	if err := g.setUpAudit(); err != nil {
		return nil, err
	}
	var retryAfter <-chan struct{}
	if g.opts.Generic.ShutdownSendRetryAfter {
		retryAfter = g.Server.Signals().AfterShutdownDelayDuration.Signaled()
	}
	chain := filters.BuildHandlerChain(grpcHandler(g.grpc, mux), filters.ChainConfig{
		Log:                         g.Log,
		RequestTimeout:              g.opts.RequestTimeout,
		MaxRequestsInFlight:         g.opts.MaxRequestsInFlight,
		MaxMutatingRequestsInFlight: g.opts.MaxMutatingRequestsInFlight,
		Authentication:              authentication,
		Authorizer:                  g.authorizer,
		Auditor:                     g.auditor,
		HSTSDirectives:              g.opts.HSTSDirectives,
		Metrics:                     filters.NewRequestMetrics(g.metrics),
		InFlight:                    &g.Server.InFlight,
		RetryAfter:                  retryAfter,
		PriorityAndFairness:         pf,
	})
	g.loopback.Serve(chain) // the loopback client's requests take the whole chain
	return chain, nil
}

// grpcInterceptors finish, for a gRPC call, the filters its message decides (the HTTP chain
// has run the others): its request info, audit, priority and fairness and authorization, in
// the HTTP chain's order.
func (g *Gateway) grpcInterceptors() []grpc.ServerOption {
	infoU, infoS := filters.GRPCRequestInfo()
	authzU, authzS := filters.GRPCAuthorization(g.authorizer)
	unary := []grpc.UnaryServerInterceptor{infoU, audit.UnaryInterceptor()}
	stream := []grpc.StreamServerInterceptor{infoS, audit.StreamInterceptor()}
	if g.apf != nil {
		unary = append(unary, g.apf.UnaryInterceptor(g.opts.RequestTimeout/4))
		stream = append(stream, g.apf.StreamInterceptor(g.opts.RequestTimeout/4))
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(append(unary, authzU)...), grpc.ChainStreamInterceptor(append(stream, authzS)...)}
}

// setUpAudit makes the auditor when a backend is configured.
func (g *Gateway) setUpAudit() error {
	o := g.opts.Audit
	if !o.Enabled() {
		return nil
	}
	policy, err := audit.LoadPolicy(o.PolicyFile)
	if err != nil {
		return fmt.Errorf("--audit-policy-file: %w", err)
	}
	var sinks audit.Sinks
	if o.LogPath != "" {
		g.auditLog = audit.NewLogBackend(o)
		sinks = append(sinks, g.auditLog)
	}
	if o.NATSSubject != "" {
		if g.auditNATS, err = audit.NewNATSBackend(g.nc, o.NATSSubject, g.Log); err != nil {
			return fmt.Errorf("--audit-nats-subject: %w", err)
		}
		sinks = append(sinks, g.auditNATS)
	}
	g.auditor = audit.New(policy, sinks)
	return nil
}

// addHooks registers the gateway's own post-start hooks.
func (g *Gateway) addHooks() error {
	if err := g.Server.AddPostStartHook("start-lifecycle-watcher", func(ctx context.Context) error {
		return g.waitFirstState(ctx)
	}); err != nil {
		return err
	}
	if err := g.Server.AddPostStartHook("delegation-chain-complete", func(ctx context.Context) error {
		if err := waitFor(ctx, g.registry, g.router.Complete); err != nil {
			return err
		}
		g.Server.Signals().MuxAndDiscoveryComplete.Signal()
		return nil
	}); err != nil {
		return err
	}
	// Namespace deletion works on the whole chain (core's resources, custom resources, the
	// aggregated APIs), so it runs where the whole chain is reached: through the loopback.
	if err := g.Server.AddPostStartHook("start-namespace-lifecycle-controller", func(ctx context.Context) error {
		c, err := namespace.New(g.loopback.Config("apichain-gateway/namespace-controller"), g.router.Complete, g.Log)
		if err != nil {
			return err
		}
		go c.Run(ctx, 2*time.Second) // ctx lives until shutdown starts
		return nil
	}); err != nil {
		return err
	}
	if err := g.Server.AddPostStartHook("start-cluster-authentication-info-controller", func(ctx context.Context) error {
		go g.publishAuthenticationInfo(ctx, routing.NewClient(g.router))
		return nil
	}); err != nil {
		return err
	}
	if g.apf != nil {
		if err := g.Server.AddPostStartHook("priority-and-fairness-config-consumer", func(ctx context.Context) error {
			g.apf.Run(ctx)
			return nil
		}); err != nil {
			return err
		}
	}
	if g.rbacSync == nil {
		return nil
	}
	// Not ready before RBAC can decide: until then only system:masters gets anything.
	return g.Server.AddPostStartHook("start-rbac-authorizer", func(ctx context.Context) error {
		select {
		case <-g.rbacSync.Synced():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// Snapshot is the gateway's own lifecycle state.
func (g *Gateway) Snapshot() *lifecyclev1.InstanceState {
	return lifecycle.Snapshot(g.Server, g.instance)
}

// Run serves until ctx is done, then shuts down gracefully.
func (g *Gateway) Run(ctx context.Context) error {
	defer g.pool.CloseAll()
	ttl := g.opts.Lifecycle.TTL
	g.Server.MirrorHealth(g.health, topology.Gateway)
	g.registry.OnChange(func() { g.router.RetainConns(g.staticAddresses()) })
	g.registry.OnChange(g.Server.RecheckReadiness)
	g.Log.Info("Serving securely on "+g.ln.Addr().String(), "url", g.URL(), "kubeconfig", g.kubeconfig)
	tasks := []func(context.Context){
		func(ctx context.Context) { lifecycle.WatchNATS(ctx, g.nc, ttl, g.registry, g.Log) },
		func(ctx context.Context) { lifecycle.PollGRPC(ctx, g.registry, g.staticAddresses, g.dial, ttl/5) },
		func(ctx context.Context) {
			lifecycle.Announce(ctx, g.nc, g.Server, func() lifecycle.Instance { return g.instance }, ttl, g.Log)
		},
		g.saObjects.Run,
	}
	if g.rbacSync != nil {
		tasks = append(tasks, g.rbacSync.Run)
	}
	if g.auditNATS != nil {
		tasks = append(tasks, g.auditNATS.Run)
	}
	if g.auditLog != nil {
		defer g.auditLog.Close()
	}
	return g.Server.RunAlongside(ctx, tasks...)
}

func (g *Gateway) staticAddresses() []string {
	var out []string
	for _, svc := range topology.Chain() {
		out = append(out, g.opts.BackendAddresses[svc]...)
	}
	return out
}

func (g *Gateway) dial(addr string) (grpc.ClientConnInterface, error) {
	c, err := g.pool.Get(addr)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// kubeLibraryMetrics are the metrics kube's libraries (priority and fairness) register with
// component-base's registry, without the Go and process collectors it registers as well: our
// own registry has those.
var kubeLibraryMetrics = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	kept := families[:0]
	for _, f := range families {
		if name := f.GetName(); !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			kept = append(kept, f)
		}
	}
	return kept, err
})
