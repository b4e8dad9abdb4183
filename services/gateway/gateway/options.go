// Package gateway is apichain's front door: the TLS listener (HTTP/1.1, h2 and gRPC on one
// port), the filter chain, local routes, readiness gathered from every instance over NATS,
// and delegation to the backends over gRPC in chain order.
package gateway

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/server"
	"github.com/spf13/pflag"
)

// Options are the gateway's flags.
type Options struct {
	InstanceID    string
	BindAddress   string
	SecurePort    int
	DataDir       string
	ExternalHosts []string

	TLSCertFile  string
	TLSKeyFile   string
	ClientCAFile string

	TokenAuthFile  string
	AnonymousAuth  bool
	HSTSDirectives string

	BackendCAFile         string
	BackendClientCertFile string
	BackendClientKeyFile  string
	BackendServerName     string
	// Static backend addresses, used when NATS is unreachable (and as a seed).
	AggregatorAddresses []string
	CoreAddresses       []string
	ExtensionsAddresses []string

	NATSURL      string
	LifecycleTTL time.Duration

	RequestTimeout              time.Duration
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int

	Generic server.Options
}

// NewOptions returns kube-apiserver's defaults where it has them.
func NewOptions() *Options {
	return &Options{
		BindAddress:                 "0.0.0.0",
		SecurePort:                  6443,
		DataDir:                     "apichain-data",
		AnonymousAuth:               true,
		BackendServerName:           "apichain-backend",
		NATSURL:                     "nats://127.0.0.1:4222",
		LifecycleTTL:                lifecycle.DefaultTTL,
		RequestTimeout:              60 * time.Second,
		MaxRequestsInFlight:         400,
		MaxMutatingRequestsInFlight: 200,
		Generic:                     server.DefaultOptions(),
	}
}

// AddFlags registers the options.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.InstanceID, "instance-id", o.InstanceID, "Instance id published in lifecycle state (default: hostname and pid).")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Address to serve HTTPS and gRPC on.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port to serve HTTPS and gRPC on (0 picks a free port).")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for generated certificates and the admin kubeconfig.")
	fs.StringSliceVar(&o.ExternalHosts, "external-hostname", o.ExternalHosts, "Extra names and IPs for the generated serving certificate.")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "Serving certificate (default: generated in --data-dir).")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "Serving key (default: generated in --data-dir).")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CA for client certificate authentication (default: the generated CA).")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "Static bearer tokens, CSV: token,user,uid,\"group1,group2\".")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "Let requests without credentials reach /healthz, /livez, /readyz and /version as system:anonymous.")
	fs.StringVar(&o.HSTSDirectives, "strict-transport-security-directives", o.HSTSDirectives, "Strict-Transport-Security header value; empty sends none.")
	fs.StringVar(&o.BackendCAFile, "backend-ca-file", o.BackendCAFile, "CA of the backends' serving certificates (default: the generated CA).")
	fs.StringVar(&o.BackendClientCertFile, "backend-client-cert-file", o.BackendClientCertFile, "Client certificate for the backends (default: generated).")
	fs.StringVar(&o.BackendClientKeyFile, "backend-client-key-file", o.BackendClientKeyFile, "Client key for the backends (default: generated).")
	fs.StringVar(&o.BackendServerName, "backend-server-name", o.BackendServerName, "Name expected in the backends' serving certificates.")
	fs.StringSliceVar(&o.AggregatorAddresses, "aggregator-address", o.AggregatorAddresses, "Aggregator gRPC addresses used when NATS is unreachable.")
	fs.StringSliceVar(&o.CoreAddresses, "core-address", o.CoreAddresses, "Core gRPC addresses used when NATS is unreachable.")
	fs.StringSliceVar(&o.ExtensionsAddresses, "extensions-address", o.ExtensionsAddresses, "Extensions gRPC addresses used when NATS is unreachable.")
	fs.StringVar(&o.NATSURL, "nats-url", o.NATSURL, "NATS URL for lifecycle state.")
	fs.DurationVar(&o.LifecycleTTL, "lifecycle-ttl", o.LifecycleTTL, "How long an instance's state lives without a heartbeat.")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "Upper bound for non-long-running requests.")
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight, "Concurrent read-only requests before 429 (0: no limit).")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight, "Concurrent mutating requests before 429 (0: no limit).")
	o.Generic.AddFlags(fs)
}

// Complete fills defaults.
func (o *Options) Complete() error {
	if o.InstanceID == "" {
		o.InstanceID = server.DefaultInstanceID()
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return err
	}
	o.DataDir = abs
	return nil
}

// Validate reports bad options.
func (o *Options) Validate() error {
	var errs []error
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d out of range", o.SecurePort))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together"))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, errors.New("--request-timeout must be positive"))
	}
	return errors.Join(errs...)
}
