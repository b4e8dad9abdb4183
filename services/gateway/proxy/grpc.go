package gateway

import (
	"context"
	"net/http"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/caller"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/services/gateway/filters"
	"google.golang.org/grpc"
)

// resourceProxy is the public gRPC ResourceService: gRPC clients reach the gateway's port,
// pass the same filters as HTTP clients, and are delegated like them.
type resourceProxy struct {
	resourcev1.UnimplementedResourceServiceServer
	rt *router
}

func gv(ref *resourcev1.ResourceRef) string { return groupVersion(ref.GetGroup(), ref.GetVersion()) }

// outgoing turns the identity the filters established into backend metadata.
func outgoing(ctx context.Context) context.Context {
	c := &resourcev1.Caller{AuditId: filters.AuditIDFrom(ctx)}
	if u, ok := filters.UserFrom(ctx); ok {
		c.Name, c.Uid, c.Groups = u.Name, u.UID, u.Groups
		for k, v := range u.Extra {
			if c.Extra == nil {
				c.Extra = map[string]*resourcev1.ExtraValues{}
			}
			c.Extra[k] = &resourcev1.ExtraValues{Values: v}
		}
	}
	return caller.Outgoing(ctx, c)
}

// chainError turns the end of the chain into the kube Status a REST client would get.
func chainError[T any](resp T, err error) (T, error) {
	if st := chainStatus(err); st != nil {
		return resp, rpcstatus.FromKube(st)
	}
	return resp, err
}

func client(c grpc.ClientConnInterface) resourcev1.ResourceServiceClient {
	return resourcev1.NewResourceServiceClient(c)
}

func (p *resourceProxy) Get(ctx context.Context, req *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	return chainError(invoke(outgoing(ctx), p.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.GetResponse, error) {
		return client(c).Get(ctx, req)
	}))
}

func (p *resourceProxy) List(ctx context.Context, req *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	return chainError(invoke(outgoing(ctx), p.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.ListResponse, error) {
		return client(c).List(ctx, req)
	}))
}

func (p *resourceProxy) Create(ctx context.Context, req *resourcev1.CreateRequest) (*resourcev1.CreateResponse, error) {
	wctx, warns := withWarnings(ctx)
	defer warns.forwardGRPC(ctx)
	ctx = wctx
	return chainError(invoke(outgoing(ctx), p.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.CreateResponse, error) {
		return client(c).Create(ctx, req)
	}))
}

func (p *resourceProxy) Update(ctx context.Context, req *resourcev1.UpdateRequest) (*resourcev1.UpdateResponse, error) {
	wctx, warns := withWarnings(ctx)
	defer warns.forwardGRPC(ctx)
	ctx = wctx
	return chainError(invoke(outgoing(ctx), p.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.UpdateResponse, error) {
		return client(c).Update(ctx, req)
	}))
}

func (p *resourceProxy) Patch(ctx context.Context, req *resourcev1.PatchRequest) (*resourcev1.PatchResponse, error) {
	wctx, warns := withWarnings(ctx)
	defer warns.forwardGRPC(ctx)
	ctx = wctx
	return chainError(invoke(outgoing(ctx), p.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.PatchResponse, error) {
		return client(c).Patch(ctx, req)
	}))
}

func (p *resourceProxy) Delete(ctx context.Context, req *resourcev1.DeleteRequest) (*resourcev1.DeleteResponse, error) {
	return chainError(invoke(outgoing(ctx), p.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.DeleteResponse, error) {
		return client(c).Delete(ctx, req)
	}))
}

func (p *resourceProxy) DeleteCollection(ctx context.Context, req *resourcev1.DeleteCollectionRequest) (*resourcev1.DeleteCollectionResponse, error) {
	return chainError(invoke(outgoing(ctx), p.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.DeleteCollectionResponse, error) {
		return client(c).DeleteCollection(ctx, req)
	}))
}

func (p *resourceProxy) Watch(req *resourcev1.WatchRequest, out grpc.ServerStreamingServer[resourcev1.WatchResponse]) error {
	in, err := chainError(invoke(outgoing(out.Context()), p.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (grpc.ServerStreamingClient[resourcev1.WatchResponse], error) {
		s, err := client(c).Watch(ctx, req)
		if err != nil {
			return nil, err
		}
		// The first message confirms the backend serves the watch (or carries its error).
		first, err := s.Recv()
		if err != nil {
			return nil, err
		}
		return &prefetched{ServerStreamingClient: s, first: first}, nil
	}))
	if err != nil {
		return err
	}
	for {
		ev, err := in.Recv()
		if err != nil {
			return nil
		}
		if err := out.Send(ev); err != nil {
			return err
		}
	}
}

type prefetched struct {
	grpc.ServerStreamingClient[resourcev1.WatchResponse]
	first *resourcev1.WatchResponse
}

func (p *prefetched) Recv() (*resourcev1.WatchResponse, error) {
	if f := p.first; f != nil {
		p.first = nil
		return f, nil
	}
	return p.ServerStreamingClient.Recv()
}

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
