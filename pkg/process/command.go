package process

import (
	"fmt"
	"k8s.io/klog/v2"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Command is a process's main command: the flags of every module the targets need, and a
// run that serves until SIGTERM or Ctrl-C starts the graceful stop. Every service's main and
// the all-in-one use it, so they log, stop and fail the same way.
func (p *Process) Command(use, short string, targets ...string) *cobra.Command {
	order, err := p.resolve(targets)
	if err != nil {
		panic(err) // the module table is code: a bad one must not ship
	}
	var level string
	cmd := &cobra.Command{
		Use:          use,
		Short:        short,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := NewLogger(level)
			if err != nil {
				return err
			}
			p.Log = log
			// Until SIGTERM or SIGINT, or the end of the context the command was executed
			// with (a test server stops that way).
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			if err := p.Run(ctx, targets...); err != nil {
				log.Error(use+" stopped with an error", "err", err)
				return err
			}
			log.Info(use + " stopped cleanly")
			return nil
		},
	}
	for _, name := range order {
		if f := p.modules[name].Flags; f != nil {
			f(cmd.Flags())
		}
	}
	cmd.Flags().StringVar(&level, "log-level", "info", "Log level: debug, info, warn, error.")
	return cmd
}

// NewLogger is the text logger on stderr every process uses; it is also slog's default, and
// klog's (kube's libraries log through klog), so every line shares its format and level.
func NewLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
	slog.SetDefault(log)
	klog.SetSlogLogger(log)
	return log, nil
}
