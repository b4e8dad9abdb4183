package backend

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/admission/plugins"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/controller"
	"github.com/apichain/apichain/pkg/inprocess"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/metrics"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/routing"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/apichain/apichain/pkg/storage/encryption"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/pkg/tracing"
	"github.com/nats-io/nats.go"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Backend is one backend process (or one backend inside the all-in-one).
type Backend struct {
	Server *server.Server
	Etcd   *clientv3.Client
	Log    *slog.Logger

	opts      *Options
	tracer    *tracing.Tracer
	grpc      *grpc.Server
	transport *server.GRPCTransport
	ln        net.Listener
	health    *health.Server
	discovery *Discovery
	instMu    sync.Mutex
	instance  lifecycle.Instance
	nc        *nats.Conn
	resources resourcev1.ResourceServiceServer
	// instances are every instance's lifecycle state, from NATS while the backend runs; peers
	// routes by them to the services that own the kinds this one reads.
	instances *lifecycle.Registry
	peers     *routing.Router
	store     *storage.Store
	claimed   []string // key prefixes the backend owns besides its resources'
	// stopBackground ends the background work New starts: the encryption configuration's
	// reload and KMS connections, the check of etcd's layout.
	stopBackground context.CancelFunc
}

// Tracer is the backend's tracing (tracing.Tracer.Active is nil when it is off).
func (b *Backend) Tracer() *tracing.Tracer { return b.tracer }

// AdmissionPlugins are the admission plugins the backend runs.
func (b *Backend) AdmissionPlugins() *plugins.Options { return &b.opts.Admission }

// Controllers are the kube-controller-manager controllers the backend runs.
func (b *Backend) Controllers() controller.Selection { return b.opts.Controllers }

// New binds the listener and builds the gRPC server; its lifecycle state goes out over nc.
// served lists what the backend serves, in its preferred order; register a ResourceService
// with SetResources before Run.
func New(opts *Options, served []*discoveryv1.GroupVersion, nc *nats.Conn, log *slog.Logger) (*Backend, error) {
	log = log.With("service", opts.Service, "instance", opts.Lifecycle.InstanceID)
	srv := server.New(opts.Service, opts.Generic, log)

	tlsCfg, err := opts.Serving.TLSConfig(true)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", opts.BindAddress, err)
	}
	etcdTLS, err := opts.EtcdTLS()
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("etcd TLS: %w", err)
	}
	tracer, err := opts.Tracing.New(context.Background(), opts.Service, opts.Lifecycle.InstanceID)
	if err != nil {
		ln.Close()
		return nil, err
	}
	var etcd *clientv3.Client
	if opts.InProcessEtcd != nil && tracer.Active() == nil {
		etcd = opts.InProcessEtcd()
	} else if etcd, err = storage.NewClient(opts.EtcdServers, etcdTLS, tracer.DialOptions()...); err != nil {
		ln.Close()
		return nil, err
	}
	peerTLS, err := certs.ClientTLSConfig(opts.Serving.ClientCAFile, opts.Serving.CertFile, opts.Serving.KeyFile, topology.BackendServerName)
	if err != nil {
		ln.Close()
		etcd.Close()
		return nil, fmt.Errorf("TLS towards other backends: %w", err)
	}
	b := &Backend{Server: srv, Etcd: etcd, Log: log, opts: opts, ln: ln, nc: nc, health: health.NewServer(),
		discovery: NewDiscovery(served), instances: lifecycle.NewRegistry(opts.Lifecycle.TTL), tracer: tracer}
	b.peers = routing.NewPeerRouter(b.instances, routing.NewPool(credentials.NewTLS(peerTLS), tracer.DialOptions()...))
	b.store = storage.NewStore(etcd, opts.EtcdPrefix).Guarded(b.owns).Resolving(b.resourceOf)
	background, stopBackground := context.WithCancel(context.Background())
	b.stopBackground = stopBackground
	layoutOpen := make(chan struct{})
	b.store = b.store.Gated(layoutOpen)
	if err := b.checkLayout(background, layoutOpen); err != nil {
		b.close()
		return nil, err
	}
	enc, err := encryption.Start(background, opts.Encryption, opts.Lifecycle.InstanceID, log)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("encryption at rest: %w", err)
	}
	if enc != nil {
		b.store = b.store.Encrypted(enc)
		srv.AddHealthChecks(enc.HealthChecks()...)
	}
	b.instance = lifecycle.Instance{Service: opts.Service, InstanceID: opts.Lifecycle.InstanceID,
		Address: advertise(opts.AdvertiseAddress, ln.Addr()), Served: b.discovery.ServedNames()}

	// grpc-go's server metrics, counted only where they are served.
	unary, stream := []grpc.UnaryServerInterceptor{b.unaryInterceptor}, []grpc.StreamServerInterceptor{b.streamInterceptor}
	grpcMetrics := newGRPCServerMetrics()
	if opts.MetricsBindAddress != "" {
		unary = append([]grpc.UnaryServerInterceptor{grpcMetrics.UnaryServerInterceptor()}, unary...)
		stream = append([]grpc.StreamServerInterceptor{grpcMetrics.StreamServerInterceptor()}, stream...)
	}
	b.grpc = grpc.NewServer(append(tracer.ServerOptions(),
		grpc.Creds(credentials.NewTLS(tlsCfg)),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: opts.MaxConnectionAge, MaxConnectionAgeGrace: 30 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
		grpc.MaxRecvMsgSize(16<<20),
		// Requests taken one after another by long-lived goroutines, whose stacks stay grown
		// to the depth of the handlers (a fresh goroutine per request copies its stack at
		// every doubling: a tenth of a get's CPU); any beyond them get goroutines of their own.
		grpc.NumStreamWorkers(streamWorkers),
	)...)
	b.transport = server.NewGRPCTransport(b.grpc)
	// The all-in-one's gateway and other backends call it in memory (inprocess.Dial).
	srv.AddTransport("grpc", b.transport, inprocess.Listen(ln, b.instance.Address))
	if opts.MetricsBindAddress != "" {
		reg := metrics.NewRegistry()
		reg.MustRegister(grpcMetrics)
		if err := b.serveMetrics(reg); err != nil {
			b.close()
			return nil, err
		}
	}

	srv.AddHealthChecks(storage.HealthCheck(etcd))
	if err := srv.AddPostStartHook("storage-readiness", func(ctx context.Context) error {
		if err := storage.WaitReady(ctx, etcd); err != nil {
			return err
		}
		return b.store.WaitOpen(ctx) // etcd's layout is kube's (checkLayout)
	}); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// close releases what New acquired, for a backend that will not run.
func (b *Backend) close() {
	_ = b.ln.Close()
	_ = b.Etcd.Close()
	b.stopBackground()
}

// advertise turns a bound address into one a peer can dial.
func advertise(configured string, bound net.Addr) string {
	if configured != "" {
		return configured
	}
	tcp := bound.(*net.TCPAddr)
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
		if h, err := osHostname(); err == nil {
			host = h
			// In a container the hostname resolves (via /etc/hosts) to the address peers on
			// its network can dial; other containers may not resolve the name itself.
			if addrs, err := lookupHost(h); err == nil {
				for _, a := range addrs {
					if ip := net.ParseIP(a); ip != nil && !ip.IsLoopback() && ip.To4() != nil {
						host = a
						break
					}
				}
			}
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// SetOpenAPI serves OpenAPI documents for src's kinds; they are built in the background once
// the backend is ready, or on the first request for one.
func (b *Backend) SetOpenAPI(src OpenAPISource) {
	signals := b.Server.Signals()
	b.discovery.openapi = newLazyOpenAPI(src, signals.HasBeenReady.Signaled(), signals.ShutdownInitiated.Signaled())
}

// SetResources installs the ResourceService implementation (default: nothing is served).
func (b *Backend) SetResources(r resourcev1.ResourceServiceServer) { b.resources = r }

// InstallRegistry serves set's resources from a registry handler on the backend's storage:
// its ResourceService and OpenAPI documents, and its watch caches once it has started
// (post-start hook start-watch-cache; caches fill on first use and stop when shutdown starts,
// which moves watchers to other replicas early).
func (b *Backend) InstallRegistry(scheme *registry.Scheme, set *registry.Set) (*registry.Handler, error) {
	b.SetOpenAPI(set)
	h := registry.NewHandler(scheme, set, b.store, b.Stopping())
	if err := h.SetStorageMediaType(b.opts.StorageMediaType); err != nil {
		return nil, err
	}
	registry.SetItemEncodingBudget(b.opts.WatchCacheEncodingBudget.Value())
	b.SetResources(h)
	return h, b.Server.AddPostStartHook("start-watch-cache", func(ctx context.Context) error {
		h.EnableWatchCache(ctx, b.Log)
		return nil
	})
}

// streamWorkers is how many goroutines take the backend's gRPC requests one after another. A
// watch holds one for as long as it lasts, so there are more than the requests in flight at
// once: with 16, the all-in-one's watches left too few for 16 clients' gets, which went to
// fresh goroutines (stack growth was then a twentieth of its CPU under gets).
const streamWorkers = 64

// Store is the backend's storage in etcd. It touches only the keys of the kinds the
// backend's ResourceService stores (a registry.Handler's, as they change) and those claimed
// with ClaimKeys, and refuses any other (storage.ErrNotOwned): a kind is stored by the one
// service that serves it, and the others read it through its gRPC API (Peers).
func (b *Backend) Store() *storage.Store { return b.store }

// ClaimKeys adds keys under prefix to what Store may touch (core's node-port allocations,
// which are no kind); call it before Run.
func (b *Backend) ClaimKeys(prefix string) { b.claimed = append(b.claimed, prefix) }

// layoutCheckTimeout bounds the check of etcd's layout at start: an etcd that answers gets
// its answer (a split service on an earlier layout refuses to start); one that does not is
// checked again in the background while the store stays closed.
const layoutCheckTimeout = 2 * time.Second

// checkLayout opens the store once etcd is known to hold kube's layout. An earlier apichain's
// layout is moved by opts.MigrateLayout where there is one (the all-in-one), else refused:
// its objects would be invisible, and new ones written beside them.
func (b *Backend) checkLayout(background context.Context, open chan struct{}) error {
	ctx, cancel := context.WithTimeout(background, layoutCheckTimeout)
	legacy, err := registry.NeedsLayoutMigration(ctx, b.Etcd, b.store.Prefix())
	cancel()
	if err == nil && legacy && b.opts.MigrateLayout == nil {
		return b.legacyLayoutError()
	}
	if err == nil && !legacy {
		close(open)
		return nil
	}
	go func() {
		ctx := background
		for ctx.Err() == nil {
			legacy, err := registry.NeedsLayoutMigration(ctx, b.Etcd, b.store.Prefix())
			switch {
			case err == nil && !legacy:
				close(open)
				return
			case err == nil && b.opts.MigrateLayout == nil:
				// Stays closed: nothing is read or written, and storage-readiness never passes.
				b.Log.Error("storage closed", "err", b.legacyLayoutError())
				return
			case err == nil:
				if err = b.opts.MigrateLayout(ctx, b.Etcd); err == nil {
					close(open)
					return
				}
			}
			b.Log.Warn("etcd's storage layout not known yet", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return nil
}

func (b *Backend) legacyLayoutError() error {
	return fmt.Errorf("%w: stop every apichain service and run \"apichain storage migrate --etcd-servers %s\" once, with the etcd TLS flags, "+
		"--etcd-prefix and --encryption-provider-config the services use (it is resumable), then start them", registry.ErrLegacyLayout, strings.Join(b.opts.EtcdServers, ","))
}

// resourceOf names the resource key is of, for the store's encryption and metrics.
func (b *Backend) resourceOf(key string) (schema.GroupResource, bool) {
	if o, ok := b.resources.(interface {
		ResourceOf(key string) (schema.GroupResource, bool)
	}); ok {
		return o.ResourceOf(key)
	}
	return schema.GroupResource{}, false
}

func (b *Backend) owns(key string) bool {
	if o, ok := b.resources.(interface{ Owns(key string) bool }); ok && o.Owns(key) {
		return true
	}
	for _, p := range b.claimed {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	b.Log.Error("storage refused a key of a kind this service does not serve", "key", key)
	return false
}

// Instances are every instance's published lifecycle state (the gateways', the other
// services'), kept from NATS while the backend runs; while NATS is away, entries expire after
// the lifecycle TTL.
func (b *Backend) Instances() *lifecycle.Registry { return b.instances }

// Peers is this backend's client of the kinds other services own, through their gRPC API:
// routed as the gateway routes (by the instances' lifecycle state, to a ready one), over
// mutual TLS with this backend's certificate, as the backend itself (no caller). The owner
// serves it reads only.
func (b *Backend) Peers() *routing.Client { return routing.NewClient(b.peers) }

// Address is the advertised gRPC address.
func (b *Backend) Address() string { return b.currentInstance().Address }

func (b *Backend) currentInstance() lifecycle.Instance {
	b.instMu.Lock()
	defer b.instMu.Unlock()
	return b.instance
}

// SetServed replaces the group/versions this backend serves (extensions, as CRDs come and
// go): its discovery documents answer with them at once, and its lifecycle state is
// published again so the gateways route the new group/versions here.
func (b *Backend) SetServed(served []*discoveryv1.GroupVersion) {
	b.discovery.setServed(served)
	b.instMu.Lock()
	b.instance.Served = union(b.discovery.ServedNames(), b.instance.Proxied)
	b.instMu.Unlock()
	b.Server.NotifyChange()
}

// SetDiscoveryWarnings replaces the warnings sent with this backend's group lists (/api,
// /apis): the aggregator names the aggregated APIs that do not answer.
func (b *Backend) SetDiscoveryWarnings(ws []string) { b.discovery.warnings.Store(&ws) }

// SetGroupOrder makes this backend answer for the order of the groups in /apis (the
// aggregator: by its APIServices' priorities, as kube orders them).
func (b *Backend) SetGroupOrder(order func(context.Context) ([]string, error)) {
	b.discovery.groupOrder.Store(&order)
}

// SetProxied replaces the group/versions this backend forwards to aggregated API servers (the
// aggregator's remote APIServices): they are published as served and proxied, so the gateways
// send their requests here as HTTP exchanges.
func (b *Backend) SetProxied(gvs []string) {
	b.instMu.Lock()
	b.instance.Proxied = slices.Clone(gvs)
	b.instance.Served = union(b.discovery.ServedNames(), gvs)
	b.instMu.Unlock()
	b.Server.NotifyChange()
}

// union is a followed by what of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// RegisterService adds a gRPC service beyond the ones every backend serves (the aggregator's
// ProxyService); call it before Run.
func (b *Backend) RegisterService(desc *grpc.ServiceDesc, impl any) {
	b.grpc.RegisterService(desc, impl)
}

// ClientCA is the PEM of the CA the backend trusts for its clients: the cluster's CA, which
// also signs the gateway's serving certificate.
func (b *Backend) ClientCA() ([]byte, error) { return os.ReadFile(b.opts.Serving.ClientCAFile) }

// SetFailingWebhooks publishes the admission webhooks whose calls keep failing (the gateways
// show them in /readyz?verbose and /metrics).
func (b *Backend) SetFailingWebhooks(failing []*lifecyclev1.FailingWebhook) {
	b.instMu.Lock()
	b.instance.FailingWebhooks = failing
	b.instMu.Unlock()
	b.Server.NotifyChange()
}

// Stopping is closed when shutdown starts ending long-running streams.
func (b *Backend) Stopping() <-chan struct{} { return b.transport.Stopping() }

// Snapshot is the instance's lifecycle state.
func (b *Backend) Snapshot() *lifecyclev1.InstanceState {
	return lifecycle.Snapshot(b.Server, b.currentInstance())
}

// Run serves until ctx is done and shuts down gracefully.
func (b *Backend) Run(ctx context.Context) error {
	defer b.tracer.Close(b.Log)
	resources := b.resources
	if resources == nil {
		resources = NotServedResources{}
	}
	resourcev1.RegisterResourceServiceServer(b.grpc, resources)
	discoveryv1.RegisterDiscoveryServiceServer(b.grpc, b.discovery)
	lifecyclev1.RegisterLifecycleServiceServer(b.grpc, &lifecycleService{b: b})
	healthpb.RegisterHealthServer(b.grpc, b.health)
	reflection.Register(b.grpc)
	b.Server.MirrorHealth(b.health, b.opts.Service)

	defer b.Etcd.Close()
	defer b.stopBackground()
	b.instances.OnChange(func() { b.peers.RetainConns(nil) })
	defer b.peers.CloseConns()
	return b.Server.RunAlongside(ctx, func(ctx context.Context) {
		lifecycle.Announce(ctx, b.nc, b.Server, b.currentInstance, b.opts.Lifecycle.KV(), b.Log)
	}, func(ctx context.Context) {
		lifecycle.WatchNATS(ctx, b.nc, b.opts.Lifecycle.KV(), b.instances, b.Log)
	})
}

type lifecycleService struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	b *Backend
}

func (l *lifecycleService) GetInstanceState(context.Context, *lifecyclev1.GetInstanceStateRequest) (*lifecyclev1.GetInstanceStateResponse, error) {
	return &lifecyclev1.GetInstanceStateResponse{State: l.b.Snapshot()}, nil
}
