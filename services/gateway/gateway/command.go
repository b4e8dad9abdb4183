package gateway

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

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
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			slog.SetDefault(log)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			g, err := New(opts, log)
			if err != nil {
				return err
			}
			return g.Run(ctx)
		},
	}
	opts.AddFlags(cmd.Flags())
	cmd.AddCommand(HealthcheckCommand(), InitPKICommand())
	return cmd
}
