package lifecycle

import (
	"context"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Dialer returns a connection to an instance address (the gateway's pooled connections).
type Dialer func(address string) (grpc.ClientConnInterface, error)

// PollGRPC refreshes reg over gRPC while reg's source is gRPC (NATS unreachable): every
// address known so far (and the static ones, e.g. from flags) is asked for grpc.health.v1
// status and its lifecycle state.
func PollGRPC(ctx context.Context, reg *Registry, static func() []string, dial Dialer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if reg.Source() != SourceGRPC {
			continue
		}
		addrs := map[string]bool{}
		for _, a := range static() {
			addrs[a] = true
		}
		for _, st := range reg.Instances() {
			if st.GetAddress() != "" && st.GetService() != "gateway" {
				addrs[st.GetAddress()] = true
			}
		}
		for a := range addrs {
			if st := probe(ctx, a, dial, every); st != nil {
				reg.Upsert(st, SourceGRPC)
			}
		}
		reg.MarkSynced()
	}
}

func probe(ctx context.Context, addr string, dial Dialer, timeout time.Duration) *lifecyclev1.InstanceState {
	conn, err := dial(addr)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return nil
	}
	resp, err := lifecyclev1.NewLifecycleServiceClient(conn).GetInstanceState(ctx, &lifecyclev1.GetInstanceStateRequest{})
	if err != nil {
		return nil
	}
	st := resp.GetState()
	// grpc.health.v1 is the authority on serving status in this mode.
	if hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		st.Ready = false
	}
	return st
}
