package app

import (
	"context"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/lifecycle"
)

// lifecycleAPI serves the cluster's lifecycle state (also as REST via grpc-gateway at
// /debug/lifecycle/v1/instances) and the gateway's own state.
type lifecycleAPI struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	g *Gateway
}

func (l *lifecycleAPI) GetInstanceState(context.Context, *lifecyclev1.GetInstanceStateRequest) (*lifecyclev1.GetInstanceStateResponse, error) {
	return &lifecyclev1.GetInstanceStateResponse{State: l.g.Snapshot()}, nil
}

func (l *lifecycleAPI) ListInstanceStates(context.Context, *lifecyclev1.ListInstanceStatesRequest) (*lifecyclev1.ListInstanceStatesResponse, error) {
	return &lifecyclev1.ListInstanceStatesResponse{States: l.g.registry.Instances(), Source: string(l.g.registry.Source())}, nil
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
