package app

import (
	"net/http"

	discoveryv1 "github.com/apichain/apichain/gen/apichain/discovery/v1"
	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/services/gateway/audit"
	"github.com/apichain/apichain/services/gateway/discovery"
	"github.com/apichain/apichain/services/gateway/filters"
	"github.com/apichain/apichain/services/gateway/proxy"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// newGRPCServer is the public gRPC API on the HTTPS port: kube's verbs on the whole chain
// (sharing backend watches in watches), its merged discovery, the lifecycle state, health and
// reflection.
func (g *Gateway) newGRPCServer(watches *proxy.WatchHub) *grpc.Server {
	s := grpc.NewServer(g.grpcInterceptors()...)
	resourcev1.RegisterResourceServiceServer(s, proxy.NewGRPC(g.router, g.opts.AuthorizationModes, watches))
	discoveryv1.RegisterDiscoveryServiceServer(s, discovery.NewGRPC(g.documents)) // the whole chain's, merged as over REST
	lifecyclev1.RegisterLifecycleServiceServer(s, &lifecycleAPI{g: g})
	healthpb.RegisterHealthServer(s, g.health)
	reflection.Register(s)
	return s
}

// grpcInterceptors finish, for a gRPC call, the filters its message decides (the HTTP chain
// has run the others): its request info, audit, priority and fairness and authorization, in
// the HTTP chain's order.
func (g *Gateway) grpcInterceptors() []grpc.ServerOption {
	infoU, infoS := filters.GRPCRequestInfo()
	authzU, authzS := filters.GRPCAuthorization(g.authorization.authorizer)
	unary := []grpc.UnaryServerInterceptor{infoU, audit.UnaryInterceptor()}
	stream := []grpc.StreamServerInterceptor{infoS, audit.StreamInterceptor()}
	if g.apf != nil {
		unary = append(unary, g.apf.UnaryInterceptor(g.opts.RequestTimeout/4))
		stream = append(stream, g.apf.StreamInterceptor(g.opts.RequestTimeout/4))
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(append(unary, authzU)...), grpc.ChainStreamInterceptor(append(stream, authzS)...)}
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
