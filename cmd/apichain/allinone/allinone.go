// Package allinone is the whole split API server in one process: the gateway and the
// aggregator, core and extensions backends, with an embedded etcd and NATS unless real ones
// are given. The services still talk gRPC (over loopback, mutual TLS) and publish their
// lifecycle over NATS, exactly as when they run as separate processes. The apichain command
// runs it; package apichaintest runs it inside tests.
package allinone

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/apichain/apichain/pkg/admission/plugins"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/diagnose"
	"github.com/apichain/apichain/pkg/embedded"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/process"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/apichain/apichain/pkg/storage/encryption"
	"github.com/apichain/apichain/pkg/topology"
	aggregator "github.com/apichain/apichain/services/aggregator/app"
	core "github.com/apichain/apichain/services/core/app"
	extensions "github.com/apichain/apichain/services/extensions/app"
	gateway "github.com/apichain/apichain/services/gateway/app"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The all-in-one's own modules; the others are the services' and NATS's.
const (
	moduleDataDirLock  = "data-dir-lock"
	moduleEmbeddedEtcd = "embedded-etcd"
	moduleEmbeddedNATS = "embedded-nats"
	moduleAll          = "all"
)

// allInOne is the module table of the whole split API server in one process: the gateway's
// flags configure everything; the backends get loopback addresses, the gateway's
// certificates and instance id, and an embedded etcd and NATS unless real ones are given.
type allInOne struct {
	etcdServers []string
	// embeddedEtcd is the etcd the all-in-one runs when no --etcd-servers is given; its
	// backends call it in the process.
	embeddedEtcd *embedded.Etcd
	// etcd's client TLS, for --etcd-servers (kube-apiserver's flags).
	etcdCAFile, etcdCertFile, etcdKeyFile string
	// layout is kube's --etcd-prefix and --storage-media-type, for every backend, and the
	// migration of an earlier layout, one at a time.
	layout layout
	// encodingBudget is every backend's --watch-cache-encoding-budget: one for the process.
	encodingBudget resource.Quantity
	migrating      sync.Mutex
	conn           *lifecycle.NATS
	gw             *gateway.Modules
	mu             sync.Mutex
	addresses      map[string][]string // each backend's gRPC address, once it started (concurrently)
	core           *core.Options
	aggregator     *aggregator.Options
	admission      plugins.Options // every backend's admission plugins
	// encryption at rest in every backend: the flag's file, else one generated beside the PKI
	// once (defaultEncryption), which encrypts Secrets.
	encryption        encryption.Options
	defaultEncryption func() (string, error)
}

// NewCommand is the apichain command: the all-in-one, configured by the gateway's flags (and
// the backends' own, such as core's service network). serving, if not nil, is called with the
// gateway's URL and the path of its admin kubeconfig once both are known (before /readyz
// passes).
func NewCommand(serving func(url, kubeconfig string)) *cobra.Command {
	a := &allInOne{layout: layout{prefix: storage.DefaultPrefix, media: registry.StorageMediaTypes[0]}, encodingBudget: registry.DefaultItemEncodingBudget, conn: lifecycle.NewNATS(), addresses: map[string][]string{}, core: core.NewOptions(), aggregator: &aggregator.Options{}}
	a.defaultEncryption = sync.OnceValues(func() (string, error) {
		path := filepath.Join(a.gw.PKI.Dir, certs.EncryptionConfigFile)
		return path, certs.EnsureEncryptionConfig(path)
	})
	// The chain's services, which the all-in-one runs next to the gateway.
	backends := map[string]backend.Service{
		topology.Aggregator: a.aggregator.Service(), topology.Core: a.core.Service(), topology.Extensions: extensions.Service,
	}
	a.conn.URL = "" // empty: embedded
	a.gw = gateway.NewModules(a.conn)
	a.gw.Options.BindAddress = "127.0.0.1"

	p := process.New()
	p.Register(a.gw.OptionsModule())
	// One all-in-one per data directory: a second fails at once, naming the first, instead of
	// waiting on the embedded etcd's database lock.
	p.Register(process.Module{Name: moduleDataDirLock, Deps: []string{gateway.ModuleOptions}, Init: a.lockDataDir})
	pki := a.gw.PKIModule()
	pki.Deps = append(pki.Deps, moduleDataDirLock)
	p.Register(pki)
	p.Register(process.Module{Name: moduleEmbeddedEtcd, Deps: []string{gateway.ModuleOptions, moduleDataDirLock}, Init: a.startEtcd,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringSliceVar(&a.etcdServers, "etcd-servers", nil, "etcd client URLs (default: an embedded etcd in --data-dir).")
			fs.StringVar(&a.etcdCAFile, "etcd-cafile", "", "SSL Certificate Authority file used to secure etcd communication.")
			fs.StringVar(&a.etcdCertFile, "etcd-certfile", "", "SSL certification file used to secure etcd communication.")
			fs.StringVar(&a.etcdKeyFile, "etcd-keyfile", "", "SSL key file used to secure etcd communication.")
			fs.StringVar(&a.layout.prefix, "etcd-prefix", a.layout.prefix, "The prefix to prepend to all resource paths in etcd.")
			fs.StringVar(&a.layout.media, "storage-media-type", a.layout.media,
				"The media type to use to store objects in storage. Custom resources are always stored as JSON. Supported media types: ["+
					strings.Join(registry.StorageMediaTypes, ", ")+"]")
			backend.AddEncodingBudgetFlag(fs, &a.encodingBudget)
		}})

	p.Register(process.Module{Name: moduleEmbeddedNATS, Deps: []string{gateway.ModuleOptions, moduleDataDirLock}, Init: a.startNATS})
	conn := a.conn.Module("apichain")
	conn.Deps = append(conn.Deps, moduleEmbeddedNATS)
	p.Register(conn)
	for _, svc := range topology.Chain() {
		p.Register(a.backendModule(backends[svc]))
	}
	gw := a.gw.GatewayModule()
	gw.Deps = append(gw.Deps, topology.Chain()...) // so it stops first, while the backends still answer
	initGateway := gw.Init
	gw.Init = func(ctx context.Context, log *slog.Logger) (process.Service, error) {
		a.mu.Lock()
		a.gw.Options.BackendAddresses = a.addresses
		a.mu.Unlock()
		svc, err := initGateway(ctx, log)
		if g, ok := svc.(*gateway.Gateway); ok && err == nil {
			log.Info("apichain all-in-one starting", "url", g.URL(), "kubeconfig", g.KubeconfigPath(),
				"try", "kubectl --kubeconfig "+g.KubeconfigPath()+" get --raw '/readyz?verbose'")
			if serving != nil {
				serving(g.URL(), g.KubeconfigPath())
			}
		}
		return svc, err
	}
	p.Register(gw)
	p.Register(process.Module{Name: moduleAll, Deps: topology.Services()})

	cmd := p.Command("apichain", "apichain all-in-one: gateway, aggregator, core and extensions in one process", moduleAll)
	fs := cmd.Flags()
	a.admission.AddFlags(fs)
	a.encryption.AddFlags(fs)
	fs.Lookup("encryption-provider-config").Usage += " (default: Secrets encrypted with a key generated in the data directory's pki/" + certs.EncryptionConfigFile + ")"
	for _, svc := range topology.Chain() {
		_ = fs.MarkHidden(svc + "-address")
	}
	for _, name := range []string{"backend-ca-file", "backend-client-cert-file", "backend-client-key-file", "backend-server-name"} {
		_ = fs.MarkHidden(name)
	}
	fs.Lookup("nats-url").Usage = "NATS URL (default: an embedded NATS server in --data-dir)."
	cmd.AddCommand(diagnose.NewCommand(), etcdCommand(), storageCommand())
	return cmd
}

// backendModule is svc configured from the gateway's options: loopback, its certificates, the
// etcd and NATS in use, and an instance id derived from the gateway's.
func (a *allInOne) backendModule(svc backend.Service) process.Module {
	bo := backend.NewOptions(svc.Name)
	m := backend.Module(svc, bo, a.conn)
	m.Flags = svc.Flags // the backend's shared flags come from the gateway's
	m.Deps = append(m.Deps, gateway.ModulePKI, moduleEmbeddedEtcd)
	initBackend := m.Init
	m.Init = func(ctx context.Context, log *slog.Logger) (process.Service, error) {
		gw, pki := a.gw.Options, a.gw.PKI
		bo.Lifecycle = gw.Lifecycle
		bo.Lifecycle.InstanceID = svc.Name + "-" + gw.Lifecycle.InstanceID
		bo.Tracing = gw.Tracing
		bo.BindAddress = "127.0.0.1:0"
		bo.Serving = certs.ServingOptions{CertFile: pki.BackendCertFile, KeyFile: pki.BackendKeyFile, ClientCAFile: pki.CAFile}
		bo.EtcdServers = a.etcdServers
		if a.embeddedEtcd != nil {
			bo.InProcessEtcd = a.embeddedEtcd.Client
		}
		bo.Admission, bo.Controllers = a.admission, gw.Controllers
		bo.EtcdCAFile, bo.EtcdCertFile, bo.EtcdKeyFile = a.etcdCAFile, a.etcdCertFile, a.etcdKeyFile
		bo.EtcdPrefix, bo.StorageMediaType = a.layout.prefix, a.layout.media
		bo.WatchCacheEncodingBudget = a.encodingBudget
		bo.MigrateLayout = func(ctx context.Context, c *clientv3.Client) error { return a.migrateLayout(ctx, c, log) }
		bo.Encryption = a.encryption
		file, err := a.encryptionFile()
		if err != nil {
			return nil, err
		}
		bo.Encryption.ConfigFile = file
		if svc.Name == topology.Core && gw.SecurePort != 0 {
			a.core.KubernetesServicePort = int32(gw.SecurePort) // the kubernetes Service's target
		}
		if svc.Name == topology.Core { // the test flag slows core's start, not the gateway's
			bo.Generic.TestingSlowHook, gw.Generic.TestingSlowHook = gw.Generic.TestingSlowHook, 0
		}
		if svc.Name == topology.Aggregator && a.aggregator.ProxyClientCertFile == "" && a.aggregator.ProxyClientKeyFile == "" {
			// The generated front-proxy client, which the gateway's requestheader CA signs.
			a.aggregator.ProxyClientCertFile, a.aggregator.ProxyClientKeyFile = pki.FrontProxyClientCertFile, pki.FrontProxyClientKeyFile
		}
		s, err := initBackend(ctx, log)
		if b, ok := s.(*backend.Backend); ok {
			a.mu.Lock()
			a.addresses[svc.Name] = []string{b.Address()}
			a.mu.Unlock()
		}
		return s, err
	}
	return m
}

// encryptionFile is the encryption configuration every backend runs with: the flag's, else
// the one generated in the PKI directory.
func (a *allInOne) encryptionFile() (string, error) {
	if a.encryption.ConfigFile != "" {
		return a.encryption.ConfigFile, nil
	}
	path, err := a.defaultEncryption()
	if err != nil {
		return "", fmt.Errorf("encryption configuration: %w", err)
	}
	return path, nil
}

// migrateLayout moves an earlier apichain's objects to kube's layout, once for every
// backend: an earlier layout found by one is moved while the others wait.
func (a *allInOne) migrateLayout(ctx context.Context, c *clientv3.Client, log *slog.Logger) error {
	a.migrating.Lock()
	defer a.migrating.Unlock()
	file, err := a.encryptionFile()
	if err != nil {
		return err
	}
	return a.layout.migrate(ctx, c, file, log)
}

func (a *allInOne) lockDataDir(context.Context, *slog.Logger) (process.Service, error) {
	l, err := embedded.LockDataDir(a.gw.Options.DataDir)
	if err != nil {
		return nil, err
	}
	return process.CloseOnStop(l.Unlock), nil
}

func (a *allInOne) startEtcd(ctx context.Context, log *slog.Logger) (process.Service, error) {
	if len(a.etcdServers) > 0 {
		return nil, nil
	}
	e, err := embedded.StartEtcd(ctx, a.gw.Options.DataDir, 0, 0)
	if err != nil {
		return nil, err
	}
	a.etcdServers, a.embeddedEtcd = e.Endpoints(), e
	log.Info("embedded etcd started", "endpoints", a.etcdServers, "dir", a.gw.Options.DataDir)
	return process.CloseOnStop(e.Stop), nil
}

func (a *allInOne) startNATS(_ context.Context, log *slog.Logger) (process.Service, error) {
	if a.conn.URL != "" {
		return nil, nil
	}
	n, err := embedded.StartNATS(a.gw.Options.DataDir, "127.0.0.1", 0)
	if err != nil {
		return nil, err
	}
	a.conn.URL = n.URL()
	log.Info("embedded NATS started", "url", a.conn.URL)
	return process.CloseOnStop(n.Stop), nil
}
