// Package app assembles the gateway, apichain's front door: its options and process modules,
// the TLS listener (HTTP/1.1, h2 and gRPC on one port) with the filter chain, the local
// routes, and the parts that delegate to the backends over gRPC in chain order.
package app

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/authn"
	"github.com/apichain/apichain/pkg/certs"
	"github.com/apichain/apichain/pkg/controller"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/server"
	"github.com/apichain/apichain/pkg/topology"
	"github.com/apichain/apichain/pkg/tracing"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/apichain/apichain/services/gateway/authz"
	"github.com/apichain/apichain/services/gateway/serviceaccount"
	"github.com/spf13/pflag"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Options are the gateway's flags.
type Options struct {
	// Controllers are the kube-controller-manager controllers the gateway runs (namespace
	// deletion; kube's --controllers).
	Controllers controller.Selection
	Lifecycle   lifecycle.Options
	Tracing     tracing.Options
	BindAddress string
	SecurePort  int
	// AdvertiseAddress is the IP published for the default/kubernetes endpoints (kube's flag).
	AdvertiseAddress string
	DataDir          string
	ExternalHosts    []string

	Serving certs.ServingOptions

	TokenAuthFile   string
	AnonymousAuth   bool
	RequestHeader   authn.RequestHeaderOptions
	ServiceAccounts serviceaccount.Options
	Audit           audit.Options
	// AuthorizationModes is kube's --authorization-mode, in order.
	AuthorizationModes []string
	HSTSDirectives     string

	BackendCAFile         string
	BackendClientCertFile string
	BackendClientKeyFile  string
	BackendServerName     string
	// BackendAddresses are static gRPC addresses by service, used when NATS is unreachable.
	BackendAddresses map[string][]string
	addressFlags     map[string]*[]string // --<service>-address, copied into BackendAddresses by Complete

	RequestTimeout              time.Duration
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	EnablePriorityAndFairness   bool

	Generic server.Options
}

// NewOptions returns kube-apiserver's defaults where it has them.
func NewOptions() *Options {
	return &Options{
		Lifecycle:                   lifecycle.NewOptions(),
		BindAddress:                 "0.0.0.0",
		SecurePort:                  topology.GatewayPort,
		DataDir:                     "apichain-data",
		AnonymousAuth:               true,
		ServiceAccounts:             serviceaccount.NewOptions(),
		AuthorizationModes:          []string{authz.ModeRBAC},
		BackendServerName:           topology.BackendServerName,
		BackendAddresses:            map[string][]string{},
		RequestTimeout:              60 * time.Second,
		MaxRequestsInFlight:         400,
		MaxMutatingRequestsInFlight: 200,
		EnablePriorityAndFairness:   true,
		Generic:                     server.DefaultOptions(),
	}
}

// AddFlags registers the options.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Address to serve HTTPS and gRPC on.")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress,
		"The IP address on which to advertise the apiserver to members of the cluster (the default/kubernetes endpoints). If blank, the --bind-address will be used. If --bind-address is unspecified, the host's default interface will be used.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port to serve HTTPS and gRPC on (0 picks a free port).")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for generated certificates and the admin kubeconfig.")
	fs.StringSliceVar(&o.ExternalHosts, "external-hostname", o.ExternalHosts, "Extra names and IPs for the generated serving certificate.")
	o.Serving.AddFlags(fs, "HTTPS and gRPC port", "clients", " (default: generated in --data-dir).")
	fs.StringSliceVar(&o.AuthorizationModes, "authorization-mode", o.AuthorizationModes,
		"Ordered list of authorizers after system:masters: "+strings.Join(authz.Modes, ", ")+". RBAC reads roles and bindings from core.")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "Static bearer tokens, CSV: token,user,uid,\"group1,group2\".")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "Requests without credentials are system:anonymous, for the authorizer to decide on (RBAC lets them read /healthz, /livez, /readyz and /version); otherwise they are 401.")
	o.RequestHeader.AddFlags(fs)
	controller.AddSelectionFlag(fs, &o.Controllers)
	o.ServiceAccounts.AddFlags(fs)
	o.Audit.AddFlags(fs)
	fs.StringVar(&o.HSTSDirectives, "strict-transport-security-directives", o.HSTSDirectives, "Strict-Transport-Security header value; empty sends none.")
	fs.StringVar(&o.BackendCAFile, "backend-ca-file", o.BackendCAFile, "CA of the backends' serving certificates (default: the generated CA).")
	fs.StringVar(&o.BackendClientCertFile, "backend-client-cert-file", o.BackendClientCertFile, "Client certificate for the backends (default: generated).")
	fs.StringVar(&o.BackendClientKeyFile, "backend-client-key-file", o.BackendClientKeyFile, "Client key for the backends (default: generated).")
	fs.StringVar(&o.BackendServerName, "backend-server-name", o.BackendServerName, "Name expected in the backends' serving certificates.")
	o.addressFlags = map[string]*[]string{}
	for _, svc := range topology.Chain() {
		addrs := o.BackendAddresses[svc]
		o.addressFlags[svc] = &addrs
		fs.StringSliceVar(&addrs, svc+"-address", addrs, "The "+svc+" service's gRPC addresses, used when NATS is unreachable.")
	}
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "Upper bound for non-long-running requests.")
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight,
		"With --enable-priority-and-fairness, this and --max-mutating-requests-inflight are summed into the gateway's total concurrency limit (which must be positive); otherwise the concurrent read-only requests before 429 (0: no limit).")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight,
		"With --enable-priority-and-fairness, summed with --max-requests-inflight; otherwise the concurrent mutating requests before 429 (0: no limit).")
	fs.BoolVar(&o.EnablePriorityAndFairness, "enable-priority-and-fairness", o.EnablePriorityAndFairness,
		"If true, replace the max-in-flight handler with an enhanced one that queues and dispatches with priority and fairness")
	o.Lifecycle.AddFlags(fs)
	o.Tracing.AddFlags(fs)
	o.Generic.AddFlags(fs)
}

// Complete fills defaults.
func (o *Options) Complete() error {
	o.Lifecycle.Complete()
	for svc, addrs := range o.addressFlags {
		if len(*addrs) > 0 {
			o.BackendAddresses[svc] = *addrs
		}
	}
	if o.AdvertiseAddress == "" {
		o.AdvertiseAddress = advertiseAddress(o.BindAddress)
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return err
	}
	o.DataDir = abs
	if o.MaxRequestsInFlight < 0 {
		return fmt.Errorf("--max-requests-inflight can not be negative value")
	}
	if o.MaxMutatingRequestsInFlight < 0 {
		return fmt.Errorf("--max-mutating-requests-inflight can not be negative value")
	}
	if o.EnablePriorityAndFairness && o.MaxRequestsInFlight+o.MaxMutatingRequestsInFlight <= 0 {
		return fmt.Errorf("invalid configuration: MaxRequestsInFlight=%d and MaxMutatingRequestsInFlight=%d; they must add up to something positive",
			o.MaxRequestsInFlight, o.MaxMutatingRequestsInFlight)
	}
	return nil
}

// advertiseAddress is kube's default for --advertise-address: the bind address, or the host's
// default interface's address when the bind address is unspecified ("" when it has none).
func advertiseAddress(bind string) string {
	ip := net.ParseIP(bind)
	if ip == nil {
		return ""
	}
	if !ip.IsUnspecified() {
		return ip.String()
	}
	chosen, err := utilnet.ResolveBindAddress(ip)
	if err != nil {
		return ""
	}
	return chosen.String()
}

// Validate reports bad options.
func (o *Options) Validate() error {
	errs := []error{o.Controllers.Validate()}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d out of range", o.SecurePort))
	}
	if (o.Serving.CertFile == "") != (o.Serving.KeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together"))
	}
	if o.AdvertiseAddress != "" && net.ParseIP(o.AdvertiseAddress) == nil {
		errs = append(errs, fmt.Errorf("--advertise-address %q is not an IP address", o.AdvertiseAddress))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, errors.New("--request-timeout must be positive"))
	}
	return errors.Join(append(errs, o.Lifecycle.Validate(), o.Tracing.Validate(), o.RequestHeader.Validate(), o.ServiceAccounts.Validate(), o.Audit.Validate())...)
}
