// Package backend is what every backend service (core, extensions, aggregator) is built
// from: the generic server on a gRPC transport with mutual TLS, grpc.health.v1, reflection,
// the lifecycle service and publisher, discovery, and the resource service.
package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/admission/plugins"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/controller"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/apichain/apichain/pkg/storage/encryption"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/pkg/tracing"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Options are a backend's flags.
type Options struct {
	Service   string
	Lifecycle lifecycle.Options
	Tracing   tracing.Options
	// Encryption at rest of the values this backend stores (kube's --encryption-provider-config).
	Encryption       encryption.Options
	BindAddress      string
	AdvertiseAddress string
	Serving          certs.ServingOptions
	EtcdServers      []string
	// etcd's client TLS (kube-apiserver's flags): the CA that signed etcd's serving
	// certificate, and this backend's client certificate when etcd asks for one.
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdPrefix and StorageMediaType are kube-apiserver's --etcd-prefix and
	// --storage-media-type: where objects are kept in etcd and how they are encoded.
	EtcdPrefix, StorageMediaType string
	// WatchCacheEncodingBudget bounds the bytes of list items' encodings the process's watch
	// caches keep (registry.SetItemEncodingBudget).
	WatchCacheEncodingBudget resource.Quantity
	// InProcessEtcd, when set, gives the backend a client of an etcd in its own process
	// (the all-in-one's embedded one), used instead of dialing --etcd-servers unless tracing is
	// on: etcd's spans come from the gRPC connection, as kube-apiserver's do.
	InProcessEtcd func() *clientv3.Client
	// MigrateLayout, when set, moves an earlier apichain's layout to kube's before the store
	// opens (the all-in-one's; a split service refuses to start on it instead).
	MigrateLayout    func(ctx context.Context, etcd *clientv3.Client) error
	MaxConnectionAge time.Duration
	// MetricsBindAddress serves /metrics over HTTPS (empty: not served), to callers the API
	// server reviews through the kubeconfigs (kube's delegated authentication and authorization).
	MetricsBindAddress                                string
	AuthenticationKubeconfig, AuthorizationKubeconfig string
	Generic                                           server.Options
	// Admission are the admission plugins the backend runs (kube's flags).
	Admission plugins.Options
	// Controllers are the kube-controller-manager controllers the backend runs, where it runs
	// any (core).
	Controllers controller.Selection
}

// NewOptions returns defaults for service.
func NewOptions(service string) *Options {
	return &Options{
		Service:                  service,
		Lifecycle:                lifecycle.NewOptions(),
		BindAddress:              fmt.Sprintf("0.0.0.0:%d", topology.BackendPort),
		EtcdServers:              []string{"http://127.0.0.1:2379"},
		EtcdPrefix:               storage.DefaultPrefix,
		StorageMediaType:         registry.StorageMediaTypes[0],
		WatchCacheEncodingBudget: registry.DefaultItemEncodingBudget,
		MaxConnectionAge:         2 * time.Minute,
		Generic:                  server.DefaultOptions(),
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Address the gRPC server listens on.")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress, "Address the gateway dials (default: the bound address, with the hostname for 0.0.0.0).")
	o.Serving.AddFlags(fs, "gRPC server", "the gateway", ".")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "etcd client URLs.")
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", o.EtcdCAFile, "SSL Certificate Authority file used to secure etcd communication.")
	fs.StringVar(&o.EtcdCertFile, "etcd-certfile", o.EtcdCertFile, "SSL certification file used to secure etcd communication.")
	fs.StringVar(&o.EtcdKeyFile, "etcd-keyfile", o.EtcdKeyFile, "SSL key file used to secure etcd communication.")
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", o.EtcdPrefix, "The prefix to prepend to all resource paths in etcd.")
	fs.StringVar(&o.StorageMediaType, "storage-media-type", o.StorageMediaType,
		"The media type to use to store objects in storage. Custom resources are always stored as JSON. Supported media types: ["+strings.Join(registry.StorageMediaTypes, ", ")+"]")
	AddEncodingBudgetFlag(fs, &o.WatchCacheEncodingBudget)
	fs.DurationVar(&o.MaxConnectionAge, "max-connection-age", o.MaxConnectionAge, "Close gRPC connections after this age so clients re-resolve and new replicas get traffic.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		"Address to serve /metrics on over HTTPS with the serving certificate (empty: not served). Callers need get on /metrics, as on kube-apiserver.")
	fs.StringVar(&o.AuthenticationKubeconfig, "authentication-kubeconfig", o.AuthenticationKubeconfig,
		"kubeconfig of the API server whose TokenReview authenticates the metrics endpoint's bearer tokens (client certificates are checked against --client-ca-file).")
	fs.StringVar(&o.AuthorizationKubeconfig, "authorization-kubeconfig", o.AuthorizationKubeconfig,
		"kubeconfig of the API server whose SubjectAccessReview authorizes the metrics endpoint's callers.")
	o.Lifecycle.AddFlags(fs)
	o.Tracing.AddFlags(fs)
	o.Encryption.AddFlags(fs)
	o.Generic.AddFlags(fs)
	o.Admission.AddFlags(fs)
	controller.AddSelectionFlag(fs, &o.Controllers)
}

// AddEncodingBudgetFlag registers --watch-cache-encoding-budget, into q.
func AddEncodingBudgetFlag(fs *pflag.FlagSet, q *resource.Quantity) {
	fs.Var(quantityFlag{q}, "watch-cache-encoding-budget",
		"Memory the watch caches may keep as their objects' encodings as list items, so that lists reuse them (a quantity, such as 64Mi; 0: every list encodes its items, as kube-apiserver does).")
}

// quantityFlag is a flag holding a kube quantity ("64Mi"), never negative.
type quantityFlag struct{ q *resource.Quantity }

func (f quantityFlag) String() string { return f.q.String() }
func (f quantityFlag) Type() string   { return "quantity" }
func (f quantityFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	if q.Sign() < 0 {
		return fmt.Errorf("%s is negative", s)
	}
	*f.q = q
	return nil
}

// Complete fills defaults that depend on the environment.
func (o *Options) Complete() { o.Lifecycle.Complete() }

// Validate reports missing or inconsistent options.
func (o *Options) Validate() error {
	var errs []error
	if o.Serving.CertFile == "" || o.Serving.KeyFile == "" || o.Serving.ClientCAFile == "" {
		errs = append(errs, errors.New("--tls-cert-file, --tls-private-key-file and --client-ca-file are required: backends accept only the gateway over mutual TLS"))
	}
	if len(o.EtcdServers) == 0 {
		errs = append(errs, errors.New("--etcd-servers is required"))
	}
	if !slices.Contains(registry.StorageMediaTypes, o.StorageMediaType) {
		errs = append(errs, fmt.Errorf("--storage-media-type %q is not one of %s", o.StorageMediaType, strings.Join(registry.StorageMediaTypes, ", ")))
	}
	if (o.EtcdCertFile == "") != (o.EtcdKeyFile == "") {
		errs = append(errs, errors.New("--etcd-certfile and --etcd-keyfile must be given together"))
	}
	return errors.Join(append(errs, o.Lifecycle.Validate(), o.Tracing.Validate(), o.validateMetrics(), o.Admission.Validate(), o.Controllers.Validate())...)
}

// EtcdTLS is the TLS configuration for etcd, nil when no etcd TLS flag is set.
func (o *Options) EtcdTLS() (*tls.Config, error) {
	if o.EtcdCAFile == "" && o.EtcdCertFile == "" {
		return nil, nil
	}
	return certs.ClientTLSConfig(o.EtcdCAFile, o.EtcdCertFile, o.EtcdKeyFile, "")
}
