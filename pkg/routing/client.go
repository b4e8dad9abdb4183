package routing

import (
	"context"
	"errors"
	"net/http"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/discovery"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Client is the chain's ResourceService for a process itself (the gateway's informers and
// what it publishes; a backend's copies of the kinds other services own): the same routing
// as a client's request, with no caller identity, so the backends see the process.
type Client struct {
	rt *Router
}

// NewClient calls through rt.
func NewClient(rt *Router) *Client { return &Client{rt: rt} }

// Changed is closed when the routes may have changed.
func (c *Client) Changed() <-chan struct{} { return c.rt.Changed() }

// Get reads one object through the chain.
func (c *Client) Get(ctx context.Context, req *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	return ChainError(Invoke(ctx, c.rt, GroupVersion(req.GetRef()), func(ctx context.Context, conn grpc.ClientConnInterface) (*resourcev1.GetResponse, error) {
		return resourcev1.NewResourceServiceClient(conn).Get(ctx, req)
	}))
}

// List lists through the chain.
func (c *Client) List(ctx context.Context, req *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	return ChainError(Invoke(ctx, c.rt, GroupVersion(req.GetRef()), func(ctx context.Context, conn grpc.ClientConnInterface) (*resourcev1.ListResponse, error) {
		return resourcev1.NewResourceServiceClient(conn).List(ctx, req)
	}))
}

// Watch opens a watch through the chain; it ends with ctx.
func (c *Client) Watch(ctx context.Context, req *resourcev1.WatchRequest) (grpc.ServerStreamingClient[resourcev1.WatchResponse], error) {
	s, err := WatchThrough(ctx, c.rt, GroupVersion(req.GetRef()), req)
	if err != nil {
		return ChainError[grpc.ServerStreamingClient[resourcev1.WatchResponse]](nil, err)
	}
	return s, nil
}

// Create creates an object through the chain (what the gateway publishes, such as
// kube-system/extension-apiserver-authentication).
func (c *Client) Create(ctx context.Context, req *resourcev1.CreateRequest) (*resourcev1.CreateResponse, error) {
	return ChainError(Invoke(ctx, c.rt, GroupVersion(req.GetRef()), func(ctx context.Context, conn grpc.ClientConnInterface) (*resourcev1.CreateResponse, error) {
		return resourcev1.NewResourceServiceClient(conn).Create(ctx, req)
	}))
}

// Update replaces an object through the chain.
func (c *Client) Update(ctx context.Context, req *resourcev1.UpdateRequest) (*resourcev1.UpdateResponse, error) {
	return ChainError(Invoke(ctx, c.rt, GroupVersion(req.GetRef()), func(ctx context.Context, conn grpc.ClientConnInterface) (*resourcev1.UpdateResponse, error) {
		return resourcev1.NewResourceServiceClient(conn).Update(ctx, req)
	}))
}

// GroupVersion is the routing key of ref: its "group/version" ("v1" for the legacy group).
func GroupVersion(ref *resourcev1.ResourceRef) string {
	return discovery.GroupVersion(ref.GetGroup(), ref.GetVersion())
}

// WatchThrough opens a watch on the first delegate that serves gv.
func WatchThrough(ctx context.Context, rt *Router, gv string, req *resourcev1.WatchRequest) (*Watch, error) {
	return Invoke(ctx, rt, gv, func(ctx context.Context, c grpc.ClientConnInterface) (*Watch, error) {
		return OpenWatch(ctx, c, req)
	})
}

// Watch is a backend's watch stream whose first message was read to learn whether the backend
// serves it (or its error); Recv yields that message first.
type Watch struct {
	grpc.ServerStreamingClient[resourcev1.WatchResponse]
	first    *resourcev1.WatchResponse
	warnings []string
}

// OpenWatch starts a watch on c and reads its first message.
func OpenWatch(ctx context.Context, c grpc.ClientConnInterface, req *resourcev1.WatchRequest) (*Watch, error) {
	s, err := resourcev1.NewResourceServiceClient(c).Watch(ctx, req)
	if err != nil {
		return nil, err
	}
	first, err := s.Recv()
	if err != nil {
		return nil, err
	}
	md, _ := s.Header() // there with the first message
	return &Watch{ServerStreamingClient: s, first: first, warnings: md.Get(rpcstatus.WarningMetadataKey)}, nil
}

// Warnings are the backend's warnings for the watch (a deprecated kind's).
func (w *Watch) Warnings() []string { return w.warnings }

// Recv returns the next event.
func (w *Watch) Recv() (*resourcev1.WatchResponse, error) {
	if f := w.first; f != nil {
		w.first = nil
		return f, nil
	}
	return w.ServerStreamingClient.Recv()
}

// ChainStatus is the kube Status for a request no delegate served: 404 at the end of a
// complete chain, 503 while the chain is still starting; nil for other errors.
func ChainStatus(err error) *metav1.Status {
	switch {
	case errors.Is(err, ErrEndOfChain):
		return rpcstatus.NewStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	case errors.Is(err, ErrChainIncomplete):
		return rpcstatus.NewStatus(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			"the server is currently unable to handle the request: the delegation chain is still starting")
	}
	return nil
}

// ChainError turns the end of the chain into the kube Status a REST client would get.
func ChainError[T any](resp T, err error) (T, error) {
	if st := ChainStatus(err); st != nil {
		return resp, rpcstatus.FromKube(st)
	}
	return resp, err
}
