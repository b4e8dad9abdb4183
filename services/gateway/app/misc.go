package app

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/apichain/apichain/pkg/lifecycle"
	"k8s.io/apimachinery/pkg/version"
)

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

// Version is what /version reports: the kube API level apichain serves.
var Version = version.Info{
	Major: "1", Minor: "37", GitVersion: "v1.37.0-apichain", GitCommit: "unknown", GitTreeState: "clean",
	BuildDate: "1970-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
	Platform: runtime.GOOS + "/" + runtime.GOARCH,
}

func serveVersion(w http.ResponseWriter, _ *http.Request) {
	data, _ := json.MarshalIndent(Version, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
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
