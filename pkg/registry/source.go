package registry

import (
	"context"
	"time"

	"github.com/apichain/apichain/pkg/controller"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Source is what controllers and admission plugins read objects from: the registry of the
// service that owns them (a Client) or, in any other service, a watch-fed copy read through
// the owner's gRPC API (remote.Source). Only the owner reads its kinds in etcd.
type Source interface {
	// Lookup finds a stored resource the source reads.
	Lookup(gvr schema.GroupVersionResource) (*Resource, bool)
	// Get reads one object, from a cache when it has it and live when it does not (yet). The
	// object is shared: read it, do not change it.
	Get(ctx context.Context, r *Resource, namespace, name string) (runtime.Object, error)
	// GetLive reads one object as stored now (a quorum read).
	GetLive(ctx context.Context, r *Resource, namespace, name string) (runtime.Object, error)
	// List reads r's objects in namespace ("" for all namespaces) that match fieldSelector, at
	// least as recent as every Change Watch has reported. The objects are the caller's.
	List(ctx context.Context, r *Resource, namespace, fieldSelector string) ([]runtime.Object, error)
	// ListCached lists from a cache, possibly a little behind, as an informer is.
	ListCached(ctx context.Context, r *Resource, namespace string) ([]runtime.Object, error)
	// Watch reports the changes to r's objects from now until ctx is done, when the channel
	// closes: a trigger, not the objects (read them with List).
	Watch(ctx context.Context, r *Resource) <-chan Change
}

var _ Source = (*Client)(nil)

// Reconcile is controller.Loop triggered by changes to r's objects in src: the loop of a
// controller that recomputes what it owns from one kind.
func Reconcile(ctx context.Context, src Source, r *Resource, resync time.Duration, pass func(context.Context) error) {
	controller.Loop(ctx, resync, pass, src.Watch(ctx, r))
}
