package backend

import (
	"context"
	"log/slog"
	"os"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/process"
	"github.com/spf13/pflag"
)

// Service is what a backend service adds to the generic backend: what it serves, in its
// preferred order, and Setup, which installs its resources and post-start hooks.
type Service struct {
	Name   string
	Served func() []*discoveryv1.GroupVersion
	Setup  func(*Backend) error
	// Flags registers the service's own flags (core's service network), next to the
	// backend's.
	Flags func(fs *pflag.FlagSet)
}

// Module is svc as a process module configured by opts; it needs the NATS connection.
func Module(svc Service, opts *Options, conn *lifecycle.NATS) process.Module {
	return process.Module{
		Name: svc.Name,
		Deps: []string{lifecycle.ModuleNATS},
		Flags: func(fs *pflag.FlagSet) {
			opts.AddFlags(fs)
			if svc.Flags != nil {
				svc.Flags(fs)
			}
		},
		Init: func(_ context.Context, log *slog.Logger) (process.Service, error) {
			opts.Complete()
			if err := opts.Validate(); err != nil {
				return nil, err
			}
			b, err := New(opts, svc.Served(), conn.Conn, log)
			if err != nil {
				return nil, err
			}
			if svc.Setup != nil {
				if err := svc.Setup(b); err != nil {
					b.close()
					return nil, err
				}
			}
			return b, nil
		},
	}
}

// Main runs svc as its own process, serving until SIGTERM or Ctrl-C.
func Main(svc Service, short string) {
	p := process.New()
	conn := lifecycle.NewNATS()
	p.Register(conn.Module(svc.Name))
	p.Register(Module(svc, NewOptions(svc.Name), conn))
	cmd := p.Command(svc.Name, short, svc.Name)
	cmd.AddCommand(HealthcheckCommand(svc.Name))
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
