package app

import (
	"context"
	"net/http"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/services/gateway/filters"
	"google.golang.org/grpc"
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

// grpcHandler sends gRPC calls on the HTTPS port to the gRPC server; the rest to next.
func grpcHandler(grpcSrv *grpc.Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if filters.IsGRPC(r) {
			grpcSrv.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
