package app

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"time"

	"github.com/apichain/apichain/pkg/lifecycle"
	"github.com/apichain/apichain/pkg/version"
)

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

// serveVersion answers /version with this binary's version, read once.
func serveVersion() http.HandlerFunc {
	data, _ := json.MarshalIndent(version.Get(), "", "  ")
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}
}

// waitFirstState is the start-lifecycle-watcher hook: it returns once the registry holds a
// complete picture, from NATS or from the gRPC fallback.
func (g *Gateway) waitFirstState(ctx context.Context) error {
	select {
	case <-g.registry.Synced():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitFor blocks until cond holds, re-checking when the registry changes.
func waitFor(ctx context.Context, reg *lifecycle.Registry, cond func() bool) error {
	changed := make(chan struct{}, 1)
	reg.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
	}
	return nil
}
