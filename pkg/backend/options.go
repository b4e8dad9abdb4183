// Package backend is what every backend service (core, extensions, aggregator) is built
// from: the generic server on a gRPC transport with mutual TLS, grpc.health.v1, reflection,
// the lifecycle service and publisher, discovery, and the resource service.
package backend

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/server"
	"github.com/spf13/pflag"
)

// Options are a backend's flags.
type Options struct {
	Service          string
	InstanceID       string
	BindAddress      string
	AdvertiseAddress string
	TLSCertFile      string
	TLSKeyFile       string
	ClientCAFile     string
	EtcdServers      []string
	NATSURL          string
	LifecycleTTL     time.Duration
	MaxConnectionAge time.Duration
	Generic          server.Options
}

// NewOptions returns defaults for service.
func NewOptions(service string, port int) *Options {
	return &Options{
		Service:          service,
		BindAddress:      fmt.Sprintf("0.0.0.0:%d", port),
		EtcdServers:      []string{"http://127.0.0.1:2379"},
		NATSURL:          "nats://127.0.0.1:4222",
		LifecycleTTL:     5 * time.Second,
		MaxConnectionAge: 2 * time.Minute,
		Generic:          server.DefaultOptions(),
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.InstanceID, "instance-id", o.InstanceID, "Instance id published in lifecycle state (default: hostname and pid).")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Address the gRPC server listens on.")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress, "Address the gateway dials (default: the bound address, with the hostname for 0.0.0.0).")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "Serving certificate for the gRPC server.")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "Private key of the serving certificate.")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CA that signed the gateway's client certificate.")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "etcd client URLs.")
	fs.StringVar(&o.NATSURL, "nats-url", o.NATSURL, "NATS URL for lifecycle state.")
	fs.DurationVar(&o.LifecycleTTL, "lifecycle-ttl", o.LifecycleTTL, "How long lifecycle state lives without a heartbeat.")
	fs.DurationVar(&o.MaxConnectionAge, "max-connection-age", o.MaxConnectionAge, "Close gRPC connections after this age so clients re-resolve and new replicas get traffic.")
	o.Generic.AddFlags(fs)
}

// Complete fills defaults that depend on the environment.
func (o *Options) Complete() error {
	if o.InstanceID == "" {
		o.InstanceID = server.DefaultInstanceID()
	}
	return nil
}

// Validate reports missing or inconsistent options.
func (o *Options) Validate() error {
	var errs []error
	if o.TLSCertFile == "" || o.TLSKeyFile == "" || o.ClientCAFile == "" {
		errs = append(errs, errors.New("--tls-cert-file, --tls-private-key-file and --client-ca-file are required: backends accept only the gateway over mutual TLS"))
	}
	if len(o.EtcdServers) == 0 {
		errs = append(errs, errors.New("--etcd-servers is required"))
	}
	if strings.Contains(o.InstanceID, ".") {
		errs = append(errs, errors.New("--instance-id may not contain '.'"))
	}
	return errors.Join(errs...)
}
