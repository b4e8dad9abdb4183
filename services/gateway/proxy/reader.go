package proxy

import (
	"context"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/services/gateway/routing"
	"google.golang.org/grpc"
)

// Reader reads (and writes) resources through the chain for the gateway itself (its informers,
// the objects a TokenRequest binds to, what it publishes): the same routing as a client's
// request, with no caller identity, so the backends see the gateway.
type Reader struct {
	rt *routing.Router
}

// NewReader reads through rt.
func NewReader(rt *routing.Router) *Reader { return &Reader{rt: rt} }

// Changed is closed when the routes may have changed.
func (r *Reader) Changed() <-chan struct{} { return r.rt.Changed() }

// Get reads one object through the chain.
func (r *Reader) Get(ctx context.Context, req *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	return chainError(routing.Invoke(ctx, r.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.GetResponse, error) {
		return client(c).Get(ctx, req)
	}))
}

// List lists through the chain.
func (r *Reader) List(ctx context.Context, req *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	return chainError(routing.Invoke(ctx, r.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.ListResponse, error) {
		return client(c).List(ctx, req)
	}))
}

// Watch opens a watch through the chain; it ends with ctx.
func (r *Reader) Watch(ctx context.Context, req *resourcev1.WatchRequest) (grpc.ServerStreamingClient[resourcev1.WatchResponse], error) {
	s, err := watchThrough(ctx, r.rt, gv(req.GetRef()), req)
	if err != nil {
		return chainError[grpc.ServerStreamingClient[resourcev1.WatchResponse]](nil, err)
	}
	return s, nil
}

// watchThrough opens a watch on the first delegate that serves gv.
func watchThrough(ctx context.Context, rt *routing.Router, gv string, req *resourcev1.WatchRequest) (*prefetched, error) {
	return routing.Invoke(ctx, rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*prefetched, error) {
		return openWatch(ctx, c, req)
	})
}

// openWatch starts a watch and reads its first message, which says whether the backend serves
// it (or carries its error); the stream returned yields that message first.
func openWatch(ctx context.Context, c grpc.ClientConnInterface, req *resourcev1.WatchRequest) (*prefetched, error) {
	s, err := client(c).Watch(ctx, req)
	if err != nil {
		return nil, err
	}
	first, err := s.Recv()
	if err != nil {
		return nil, err
	}
	md, _ := s.Header() // there with the first message
	return &prefetched{ServerStreamingClient: s, first: first, warnings: md.Get(rpcstatus.WarningMetadataKey)}, nil
}

// Create creates an object through the chain, as the gateway itself (what it publishes, such
// as kube-system/extension-apiserver-authentication).
func (r *Reader) Create(ctx context.Context, req *resourcev1.CreateRequest) (*resourcev1.CreateResponse, error) {
	return chainError(routing.Invoke(ctx, r.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.CreateResponse, error) {
		return client(c).Create(ctx, req)
	}))
}

// Update replaces an object through the chain, as the gateway itself.
func (r *Reader) Update(ctx context.Context, req *resourcev1.UpdateRequest) (*resourcev1.UpdateResponse, error) {
	return chainError(routing.Invoke(ctx, r.rt, gv(req.GetRef()), func(ctx context.Context, c grpc.ClientConnInterface) (*resourcev1.UpdateResponse, error) {
		return client(c).Update(ctx, req)
	}))
}
