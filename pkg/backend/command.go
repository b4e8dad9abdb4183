package backend

import (
	"context"
	"log/slog"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	"github.com/apichain/apichain/pkg/server"
	"github.com/spf13/cobra"
)

// DefaultPort is the backends' default gRPC port.
const DefaultPort = 9090

// Command is a backend service's main command: flags, then serve until SIGTERM/SIGINT.
// setup, if set, installs the service's resources and hooks on the built backend.
func Command(service string, served func() []*discoveryv1.GroupVersion, setup func(*Backend) error) *cobra.Command {
	opts := NewOptions(service, DefaultPort)
	cmd := &cobra.Command{
		Use:          service,
		Short:        "apichain " + service + " backend",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Complete(); err != nil {
				return err
			}
			if err := opts.Validate(); err != nil {
				return err
			}
			return server.Main(func(ctx context.Context, log *slog.Logger) error {
				b, err := New(opts, served(), log)
				if err != nil {
					return err
				}
				if setup != nil {
					if err := setup(b); err != nil {
						return err
					}
				}
				return b.Run(ctx)
			})
		},
	}
	opts.AddFlags(cmd.Flags())
	cmd.AddCommand(HealthcheckCommand(service))
	return cmd
}
