package server

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Main runs a service process: a text logger on stderr (also slog's default, so libraries
// share it) and a context that SIGTERM or Ctrl-C cancels, which starts the graceful shutdown.
func Main(run func(ctx context.Context, log *slog.Logger) error) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return run(ctx, log)
}
