package proxy

import (
	"context"
	"errors"
	"io"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/caller"
	"github.com/apichain/apichain/pkg/routing"
	"github.com/apichain/apichain/services/gateway/apf"
	"google.golang.org/grpc"
)

// GRPC is the public gRPC ResourceService: gRPC clients reach the gateway's port, pass the
// same filters as HTTP clients, and are delegated like them.
type GRPC struct {
	resourcev1.UnimplementedResourceServiceServer
	rt    *routing.Router
	modes []string
	hub   *WatchHub
}

// NewGRPC delegates through rt, sharing backend watches in hub; modes are the gateway's
// authorization modes, which travel with each caller.
func NewGRPC(rt *routing.Router, modes []string, hub *WatchHub) *GRPC {
	return &GRPC{rt: rt, modes: modes, hub: hub}
}

func gv(ref *resourcev1.ResourceRef) string { return routing.GroupVersion(ref) }

// outgoing turns the identity the filters established, and the authorization modes that
// decided, into backend metadata.
func outgoing(ctx context.Context, modes []string) context.Context {
	c := caller.ForRequest(ctx)
	c.AuthorizationModes = modes
	return caller.Outgoing(ctx, c)
}

func client(c grpc.ClientConnInterface) resourcev1.ResourceServiceClient {
	return resourcev1.NewResourceServiceClient(c)
}

// call delegates one unary call for ref down the chain with the caller's identity, and passes
// the backend's warnings on to the gRPC client.
func call[T any](ctx context.Context, p *GRPC, ref *resourcev1.ResourceRef, fn func(context.Context, resourcev1.ResourceServiceClient) (T, error)) (T, error) {
	wctx, warns := withWarnings(ctx)
	defer warns.forwardGRPC(ctx)
	return routing.ChainError(routing.Invoke(outgoing(wctx, p.modes), p.rt, gv(ref), func(ctx context.Context, c grpc.ClientConnInterface) (T, error) {
		return fn(ctx, client(c))
	}))
}

func (p *GRPC) Get(ctx context.Context, req *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	return call(ctx, p, req.GetRef(), func(ctx context.Context, c resourcev1.ResourceServiceClient) (*resourcev1.GetResponse, error) {
		return c.Get(ctx, req)
	})
}

func (p *GRPC) List(ctx context.Context, req *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	return call(ctx, p, req.GetRef(), func(ctx context.Context, c resourcev1.ResourceServiceClient) (*resourcev1.ListResponse, error) {
		return c.List(ctx, req)
	})
}

func (p *GRPC) Create(ctx context.Context, req *resourcev1.CreateRequest) (*resourcev1.CreateResponse, error) {
	return call(ctx, p, req.GetRef(), func(ctx context.Context, c resourcev1.ResourceServiceClient) (*resourcev1.CreateResponse, error) {
		return c.Create(ctx, req)
	})
}

func (p *GRPC) Update(ctx context.Context, req *resourcev1.UpdateRequest) (*resourcev1.UpdateResponse, error) {
	return call(ctx, p, req.GetRef(), func(ctx context.Context, c resourcev1.ResourceServiceClient) (*resourcev1.UpdateResponse, error) {
		return c.Update(ctx, req)
	})
}

func (p *GRPC) Patch(ctx context.Context, req *resourcev1.PatchRequest) (*resourcev1.PatchResponse, error) {
	return call(ctx, p, req.GetRef(), func(ctx context.Context, c resourcev1.ResourceServiceClient) (*resourcev1.PatchResponse, error) {
		return c.Patch(ctx, req)
	})
}

func (p *GRPC) Delete(ctx context.Context, req *resourcev1.DeleteRequest) (*resourcev1.DeleteResponse, error) {
	return call(ctx, p, req.GetRef(), func(ctx context.Context, c resourcev1.ResourceServiceClient) (*resourcev1.DeleteResponse, error) {
		return c.Delete(ctx, req)
	})
}

func (p *GRPC) DeleteCollection(ctx context.Context, req *resourcev1.DeleteCollectionRequest) (*resourcev1.DeleteCollectionResponse, error) {
	return call(ctx, p, req.GetRef(), func(ctx context.Context, c resourcev1.ResourceServiceClient) (*resourcev1.DeleteCollectionResponse, error) {
		return c.DeleteCollection(ctx, req)
	})
}

// StreamList relays a backend's list to the client piece by piece, as it comes.
func (p *GRPC) StreamList(req *resourcev1.StreamListRequest, out grpc.ServerStreamingServer[resourcev1.StreamListResponse]) error {
	ctx, warns := withWarnings(out.Context())
	list, err := routing.ChainError(routing.Invoke(outgoing(ctx, p.modes), p.rt, gv(req.GetList().GetRef()),
		func(ctx context.Context, c grpc.ClientConnInterface) (*listStream, error) {
			return openList(ctx, c, req)
		}))
	if err != nil {
		return err
	}
	warns.forwardGRPC(out.Context())
	for {
		piece, err := list.next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		if err := out.Send(piece); err != nil {
			return err
		}
	}
}

func (p *GRPC) Watch(req *resourcev1.WatchRequest, out grpc.ServerStreamingServer[resourcev1.WatchResponse]) error {
	in, err := routing.ChainError(p.hub.Watch(outgoing(out.Context(), p.modes), gv(req.GetRef()), req))
	if err != nil {
		return err
	}
	apf.WatchInitialized(out.Context()) // the watch is open: its priority-and-fairness seat is free
	(&warnings{list: in.Warnings()}).forwardGRPC(out.Context())
	for {
		ev, err := in.Recv()
		switch {
		case errors.Is(err, io.EOF): // the backend ended the watch: the client watches again
			return nil
		case err != nil && out.Context().Err() != nil: // the client went away
			return out.Context().Err()
		case err != nil: // the backend failed mid-watch (it died, or says why): not a clean end
			return err
		}
		if err := out.Send(ev); err != nil {
			return err
		}
	}
}
