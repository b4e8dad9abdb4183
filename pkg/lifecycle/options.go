package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/process"
	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
)

// Options name an instance in lifecycle state and say how long its state lives.
type Options struct {
	InstanceID string
	TTL        time.Duration
	// Replicas is how many NATS nodes keep the lifecycle bucket.
	Replicas int
}

// NewOptions returns the defaults.
func NewOptions() Options { return Options{TTL: DefaultTTL, Replicas: 1} }

// KV is how the lifecycle bucket is kept.
func (o *Options) KV() KV { return KV{TTL: o.TTL, Replicas: o.Replicas} }

// AddFlags registers the options.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.InstanceID, "instance-id", o.InstanceID, "Instance id published in lifecycle state (default: hostname and pid).")
	fs.DurationVar(&o.TTL, "lifecycle-ttl", o.TTL, "How long an instance's lifecycle state lives without a heartbeat.")
	fs.IntVar(&o.Replicas, "lifecycle-replicas", o.Replicas, "How many nodes of a NATS JetStream cluster keep the lifecycle bucket (1 for a single NATS server; "+
		"every process of a deployment must give the same).")
}

// Complete names the instance after its host (a container's name is unique) and pid.
func (o *Options) Complete() {
	if o.InstanceID == "" {
		host, _ := os.Hostname()
		o.InstanceID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
}

// Validate rejects ids that would break the state's key.
func (o *Options) Validate() error {
	var errs []error
	if strings.ContainsAny(o.InstanceID, ".*> ") {
		errs = append(errs, fmt.Errorf("--instance-id %q may not contain '.', '*', '>' or spaces (it is part of a NATS key)", o.InstanceID))
	}
	if o.TTL <= 0 {
		errs = append(errs, errors.New("--lifecycle-ttl must be positive"))
	}
	if o.Replicas < 1 || o.Replicas > 5 {
		errs = append(errs, fmt.Errorf("--lifecycle-replicas must be 1 to 5 (JetStream's limit), not %d", o.Replicas))
	}
	return errors.Join(errs...)
}

// ModuleNATS is the name of the NATS connection's module.
const ModuleNATS = "nats"

// NATS is a process's connection to NATS, shared by every module that publishes or watches
// lifecycle state. Conn is set once the module started.
type NATS struct {
	URL string
	// CAFile verifies the server's certificate (tls:// URLs); NkeyFile holds this service's
	// nkey seed, its NATS identity.
	CAFile, NkeyFile string
	Conn             *nats.Conn
}

// NewNATS returns the default URL.
func NewNATS() *NATS { return &NATS{URL: "nats://127.0.0.1:4222"} }

// Module connects when the process starts, and closes the connection once every module
// that uses it has stopped (and so said goodbye).
func (n *NATS) Module(name string) process.Module {
	return process.Module{
		Name: ModuleNATS,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&n.URL, "nats-url", n.URL, "NATS URL for lifecycle state.")
			fs.StringVar(&n.CAFile, "nats-ca-file", n.CAFile, "CA certificate that verifies the NATS server's (for a tls:// URL).")
			fs.StringVar(&n.NkeyFile, "nats-nkey-file", n.NkeyFile, "File holding this service's NATS nkey seed, its NATS user.")
		},
		Init: func(context.Context, *slog.Logger) (process.Service, error) {
			creds, err := n.credentials()
			if err != nil {
				return nil, fmt.Errorf("nats: %w", err)
			}
			nc, err := Connect(n.URL, name, creds...)
			if err != nil {
				return nil, fmt.Errorf("nats: %w", err)
			}
			n.Conn = nc
			return process.CloseOnStop(nc.Close), nil
		},
	}
}

func (n *NATS) credentials() ([]nats.Option, error) {
	var opts []nats.Option
	if n.CAFile != "" {
		opts = append(opts, nats.RootCAs(n.CAFile))
	}
	if n.NkeyFile != "" {
		opt, err := nats.NkeyOptionFromSeed(n.NkeyFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	}
	return opts, nil
}
