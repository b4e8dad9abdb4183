package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/controller"
	"github.com/apichain/apichain/pkg/controller/namespace"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/routing"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/pkg/tracing"
	"github.com/apichain/apichain/services/gateway/apf"
	"github.com/apichain/apichain/services/gateway/connect"
	"github.com/apichain/apichain/services/gateway/discovery"
	"github.com/apichain/apichain/services/gateway/filters"
	"github.com/apichain/apichain/services/gateway/loopback"
	"github.com/apichain/apichain/services/gateway/proxy"
	"github.com/apichain/apichain/services/gateway/reviews"
	"github.com/apichain/apichain/services/gateway/serviceaccount"
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
)

// Gateway is the front door process.
type Gateway struct {
	Server *server.Server
	Log    *slog.Logger

	opts          *Options
	pki           *certs.PKI
	nc            *nats.Conn
	ln            net.Listener
	registry      *lifecycle.Registry
	pool          *routing.Pool
	router        *routing.Router
	grpc          *grpc.Server
	health        *health.Server
	instance      lifecycle.Instance
	metrics       *prometheus.Registry
	kubeconfig    string
	authorization authorization
	saObjects     *serviceaccount.Objects
	connect       *connect.Handler
	saTokens      *serviceaccount.Tokens
	auditing      auditing
	rest          *proxy.REST
	documents     *discovery.Documents
	aggregated    *proxy.Aggregated
	reviews       *reviews.Handler
	apf           *apf.Controller // nil with --enable-priority-and-fairness=false
	loopback      *loopback.Client
	tracer        *tracing.Tracer
	// grpcClientMetrics count the calls to the backends.
	grpcClientMetrics *grpcprom.ClientMetrics
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
	if g.tracer, err = opts.Tracing.New(context.Background(), topology.Gateway, opts.Lifecycle.InstanceID); err != nil {
		return nil, err
	}
	g.grpcClientMetrics = newGRPCClientMetrics()
	g.pool = routing.NewPool(credentials.NewTLS(backendTLS), append(g.tracer.DialOptions(),
		grpc.WithChainUnaryInterceptor(g.grpcClientMetrics.UnaryClientInterceptor(), proxy.CollectWarnings),
		grpc.WithChainStreamInterceptor(g.grpcClientMetrics.StreamClientInterceptor()))...)
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
	ca, err := os.ReadFile(g.pki.CAFile)
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(g.pki.AdminCertFile)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(g.pki.AdminKeyFile)
	if err != nil {
		return err
	}
	g.kubeconfig = filepath.Join(g.opts.DataDir, "admin.kubeconfig")
	return certs.WriteKubeconfig(g.kubeconfig, g.URL(), ca, cert, key)
}

// buildHandler assembles the gateway's parts, each made by its own constructor, and the
// filter chain in front of them.
func (g *Gateway) buildHandler() (http.Handler, error) {
	var err error
	chain := routing.NewClient(g.router) // the gateway's own reads of core's objects
	if g.loopback, err = loopback.New(); err != nil {
		return nil, err
	}
	if g.opts.EnablePriorityAndFairness {
		if g.apf, err = apf.New(g.opts.MaxRequestsInFlight+g.opts.MaxMutatingRequestsInFlight, g.loopback.Config("apichain-gateway/loopback")); err != nil {
			return nil, err
		}
	}
	if g.authorization, err = newAuthorization(g.opts.AuthorizationModes, chain, g.Log); err != nil {
		return nil, err
	}
	g.saObjects = serviceaccount.NewObjects(chain, g.Log)
	if g.saTokens, err = serviceaccount.New(g.opts.ServiceAccounts.Or(g.pki), g.saObjects, g.Log); err != nil {
		return nil, err
	}
	authentication, bearer, err := newAuthentication(g.opts, g.servingOptions().ClientCAFile, g.saTokens, g.loopback)
	if err != nil {
		return nil, err
	}
	if g.auditing, err = newAuditing(g.opts.Audit, g.nc, g.Log); err != nil {
		return nil, err
	}
	watches := proxy.NewWatchHub(g.router)
	g.rest, g.documents = proxy.NewREST(g.router, g.opts.AuthorizationModes, watches), discovery.NewDocuments(g.router)
	g.aggregated = proxy.NewAggregated(g.router, g.opts.AuthorizationModes)
	g.connect = &connect.Handler{Objects: chain}
	g.reviews = &reviews.Handler{Tokens: bearer, APIAudiences: g.saTokens.APIAudiences(), Authorizer: g.authorization.authorizer}
	g.grpc = g.newGRPCServer(watches)
	g.metrics = g.newMetrics(watches)
	mux, err := g.localRoutes()
	if err != nil {
		return nil, err
	}
	h := filters.BuildHandlerChain(grpcHandler(g.grpc, mux), g.chainConfig(authentication))
	g.loopback.Serve(h) // the loopback client's requests take the whole chain
	return h, nil
}

// chainConfig configures the filter chain from the options and the parts.
func (g *Gateway) chainConfig(authentication authn.Authentication) filters.ChainConfig {
	var retryAfter <-chan struct{}
	if g.opts.Generic.ShutdownSendRetryAfter {
		retryAfter = g.Server.Signals().AfterShutdownDelayDuration.Signaled()
	}
	var pf func(http.Handler) http.Handler
	if g.apf != nil {
		pf = func(h http.Handler) http.Handler { return g.apf.Filter(h, g.opts.RequestTimeout/4) }
	}
	return filters.ChainConfig{
		Log:                         g.Log,
		RequestTimeout:              g.opts.RequestTimeout,
		MaxRequestsInFlight:         g.opts.MaxRequestsInFlight,
		MaxMutatingRequestsInFlight: g.opts.MaxMutatingRequestsInFlight,
		Authentication:              authentication,
		Authorizer:                  g.authorization.authorizer,
		Auditor:                     g.auditing.auditor,
		HSTSDirectives:              g.opts.HSTSDirectives,
		Metrics:                     filters.NewRequestMetrics(g.metrics),
		InFlight:                    &g.Server.InFlight,
		RetryAfter:                  retryAfter,
		PriorityAndFairness:         pf,
		Tracer:                      g.tracer.Active(),
	}
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
	// Without it (--controllers), as on a bare kube-apiserver, namespaces stay Terminating.
	if g.opts.Controllers.Enabled(controller.Namespace) {
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
	if g.authorization.rbacSync == nil {
		return nil
	}
	// Not ready before RBAC can decide: until then only system:masters gets anything.
	return g.Server.AddPostStartHook("start-rbac-authorizer", func(ctx context.Context) error {
		select {
		case <-g.authorization.rbacSync.Synced():
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
	defer g.tracer.Close(g.Log)
	kv := g.opts.Lifecycle.KV()
	g.Server.MirrorHealth(g.health, topology.Gateway)
	g.registry.OnChange(func() { g.router.RetainConns(g.staticAddresses()) })
	g.registry.OnChange(g.Server.RecheckReadiness)
	g.Log.Info("Serving securely on "+g.ln.Addr().String(), "url", g.URL(), "kubeconfig", g.kubeconfig)
	tasks := []func(context.Context){
		func(ctx context.Context) { lifecycle.WatchNATS(ctx, g.nc, kv, g.registry, g.Log) },
		func(ctx context.Context) { lifecycle.PollGRPC(ctx, g.registry, g.staticAddresses, g.dial, kv.TTL/5) },
		func(ctx context.Context) {
			lifecycle.Announce(ctx, g.nc, g.Server, func() lifecycle.Instance { return g.instance }, kv, g.Log)
		},
		g.saObjects.Run,
	}
	if g.authorization.rbacSync != nil {
		tasks = append(tasks, g.authorization.rbacSync.Run)
	}
	if g.auditing.nats != nil {
		tasks = append(tasks, g.auditing.nats.Run)
	}
	if g.auditing.log != nil {
		defer g.auditing.log.Close()
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
