package gateway

import (
	"context"
	"log/slog"

	"github.com/apichain/apichain/pkg/server"
	"github.com/spf13/cobra"
)

// Command is the gateway's main command.
func Command() *cobra.Command {
	opts := NewOptions()
	cmd := &cobra.Command{
		Use:          "gateway",
		Short:        "apichain gateway: TLS front door, filter chain and delegation to the backends",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Complete(); err != nil {
				return err
			}
			if err := opts.Validate(); err != nil {
				return err
			}
			return server.Main(func(ctx context.Context, log *slog.Logger) error {
				g, err := New(opts, log)
				if err != nil {
					return err
				}
				return g.Run(ctx)
			})
		},
	}
	opts.AddFlags(cmd.Flags())
	cmd.AddCommand(HealthcheckCommand(), InitPKICommand())
	return cmd
}
