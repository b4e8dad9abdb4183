package registry

import (
	"context"
	"strconv"
	"sync"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Client is how in-process controllers (pkg/controller/...) read and write a handler's
// objects: Go values, through the REST semantics the ResourceService applies (finalizers,
// graceful deletion, propagation policies, optimistic concurrency), with nothing encoded on
// the way.
type Client struct {
	h      *Handler
	dryRun bool // an action's client of a dry-run request writes nothing
}

// NewClient returns a client of h's resources.
func NewClient(h *Handler) *Client { return &Client{h: h} }

// Resources are the stored resources h serves, in the set's order (review APIs, which store
// nothing, are left out).
func (c *Client) Resources() []*Resource {
	out := make([]*Resource, 0, len(c.h.set.Load().order))
	for _, r := range c.h.set.Load().order {
		if r.stored() {
			out = append(out, r)
		}
	}
	return out
}

// Lookup finds a stored resource h serves.
func (c *Client) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	r, ok := c.h.set.Load().Lookup(gvr)
	return r, ok && r.stored()
}

// List reads r's objects in namespace ("" for all namespaces) that match fieldSelector, as
// one consistent read (from the watch cache once it caught up with etcd, when the cache is
// on). The objects are the caller's.
func (c *Client) List(ctx context.Context, r *Resource, namespace, fieldSelector string) ([]runtime.Object, error) {
	res, err := c.list(ctx, r, namespace, fieldSelector)
	if err != nil {
		return nil, err
	}
	return res.owned(), nil
}

// ListShared is List for a caller that only reads the objects: they may be the watch
// cache's, shared with every reader (as Get's are), which spares copying every object. Read
// them; do not change them.
func (c *Client) ListShared(ctx context.Context, r *Resource, namespace, fieldSelector string) ([]runtime.Object, error) {
	res, err := c.list(ctx, r, namespace, fieldSelector)
	if err != nil {
		return nil, err
	}
	return res.items, nil
}

// list is List's and ListShared's one consistent read.
func (c *Client) list(ctx context.Context, r *Resource, namespace, fieldSelector string) (*listResult, error) {
	return c.h.list(ctx, r, namespace, &resourcev1.ListOptions{FieldSelector: fieldSelector}, 0, "")
}

// ListCached lists from the watch cache once it holds r (resourceVersion "0": possibly a
// little behind, as an informer is), from etcd before.
func (c *Client) ListCached(ctx context.Context, r *Resource, namespace string) ([]runtime.Object, error) {
	res, err := c.h.list(ctx, r, namespace, &resourcev1.ListOptions{ResourceVersion: "0"}, 0, "")
	if err != nil {
		return nil, err
	}
	return res.owned(), nil
}

// Get reads one object, from the watch cache when it has it (any version is fine) and from
// etcd when it does not (yet). The object is shared: read it, do not change it.
func (c *Client) Get(ctx context.Context, r *Resource, namespace, name string) (runtime.Object, error) {
	obj, err := c.h.get(ctx, r, namespace, name, "0")
	if apierrors.IsNotFound(err) {
		obj, err = c.h.get(ctx, r, namespace, name, "")
	}
	return obj, err
}

// GetLive reads one object from etcd (a quorum read).
func (c *Client) GetLive(ctx context.Context, r *Resource, namespace, name string) (runtime.Object, error) {
	return c.h.get(ctx, r, namespace, name, "")
}

// Create creates obj in namespace as a POST does (defaulting, validation, field managers).
func (c *Client) Create(ctx context.Context, r *Resource, namespace string, obj runtime.Object) error {
	_, err := c.h.create(ctx, r, namespace, obj, c.dryRun)
	return err
}

// Delete deletes an object as a DELETE request does: finalizers (including the one its
// propagation policy adds) hold it and preconditions guard it; opts may be nil. deleted
// reports whether it is gone rather than marked for deletion.
func (c *Client) Delete(ctx context.Context, r *Resource, namespace, name string, opts *metav1.DeleteOptions) (deleted bool, err error) {
	_, deleted, err = c.h.delete(ctx, r, objectRef(r, namespace, name), opts, c.dryRun)
	return deleted, err
}

// Update changes an object, or its "status" or "finalize" subresource, with mutate, which
// edits a copy of the current object. A write that loses a race is retried on the new
// current object (kube's unconditional update); removing the last finalizer of an object
// being deleted deletes it.
func (c *Client) Update(ctx context.Context, r *Resource, namespace, name, subresource string, mutate func(obj runtime.Object)) error {
	_, err := c.Modify(ctx, r, namespace, name, subresource, func(obj runtime.Object) error {
		mutate(obj)
		return nil
	})
	return err
}

// Modify is Update with a mutate that can refuse the change (its error is returned) and the
// object written returned.
func (c *Client) Modify(ctx context.Context, r *Resource, namespace, name, subresource string, mutate func(obj runtime.Object) error) (runtime.Object, error) {
	ref := objectRef(r, namespace, name)
	ref.Subresource = subresource
	return c.h.update(ctx, r, ref, c.dryRun, func(current runtime.Object) (runtime.Object, error) {
		if err := mutate(current); err != nil {
			return nil, err
		}
		if acc, err := meta.Accessor(current); err == nil {
			acc.SetResourceVersion("") // unconditional
		}
		return current, nil
	})
}

// ReplaceStatus writes obj's status if the stored object is still at obj's resourceVersion
// (an optimistic update: a Conflict error says it moved on).
func (c *Client) ReplaceStatus(ctx context.Context, r *Resource, obj runtime.Object) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	ref := objectRef(r, acc.GetNamespace(), acc.GetName())
	ref.Subresource = "status"
	_, err = c.h.update(ctx, r, ref, false, func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil })
	return err
}

// Change is one write to stored objects, as Watch reports it.
type Change struct {
	// Deleted: an object went away.
	Deleted bool
	// Deleting: the object written is marked for deletion (it has a deletionTimestamp).
	Deleting bool
}

// Watch reports the writes to r's objects (with r nil: to the objects of every stored
// resource served now) from now until ctx is done, when the channel closes. It decodes
// nothing: controllers use it as a trigger and read what they need with List. A watch that
// fails resumes from the present after reporting one Change with neither flag set for the
// writes it may have missed.
func (c *Client) Watch(ctx context.Context, r *Resource) <-chan Change {
	if r != nil {
		return c.watchPrefix(ctx, r)
	}
	// One watch per resource: a service watches only the kinds it owns.
	out := make(chan Change, 100)
	var wg sync.WaitGroup
	for _, r := range c.Resources() {
		in := c.watchPrefix(ctx, r)
		wg.Go(func() {
			for change := range in {
				select {
				case out <- change:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}

func (c *Client) watchPrefix(ctx context.Context, r *Resource) <-chan Change {
	keyPrefix := prefix(r, "")
	out := make(chan Change, 100)
	// Set up before returning: a write made after Watch returns is reported (a controller's
	// first pass runs after Watch and must not miss the writes that follow it). From the
	// present, so the watch is caught up at once and keeps no one's progress request waiting.
	_, events, err := c.h.store.WatchNow(ctx, keyPrefix)
	if err != nil {
		events = nil
	}
	go func() {
		defer close(out)
		for {
			if events == nil { // from the present: the Change{} sent for the failure covers the gap
				events = c.h.store.Watch(ctx, keyPrefix, 0)
			}
			for ev := range events {
				if ev.Type == storage.Progress {
					continue // no write
				}
				var change Change
				if ev.Err == nil {
					change.Deleted = ev.Type == storage.Deleted
					change.Deleting = !change.Deleted && markedForDeletion(ev.Value)
				}
				select {
				case out <- change:
				case <-ctx.Done():
					return
				}
			}
			select { // the watch failed (or ctx is done): do not spin while etcd is away
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			events = nil
		}
	}()
	return out
}

// objectRef names one object of r.
func objectRef(r *Resource, namespace, name string) *resourcev1.ResourceRef {
	return &resourcev1.ResourceRef{Group: r.GroupVersion.Group, Version: r.GroupVersion.Version, Resource: r.Name,
		Namespace: namespace, Name: name}
}

// Rewrite changes the stored object with mutate and writes it as it is, conditional on the
// revision read and retried when that lost a race: kube's GuaranteedUpdate, for writes that
// bypass admission and the update strategy (a pod's binding sets spec.nodeName and a status
// condition at once). mutate's error is returned as it is.
func (c *Client) Rewrite(ctx context.Context, r *Resource, namespace, name string, mutate func(obj runtime.Object) error) (runtime.Object, error) {
	key := key(r, namespace, name)
	for {
		kv, _, err := c.h.store.Get(ctx, key, 0)
		if err != nil {
			return nil, storeError(err, r.GroupResource(), name)
		}
		obj, err := c.h.decodeStored(r, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, asStatus(err)
		}
		if err := mutate(obj); err != nil {
			return nil, err
		}
		if c.dryRun {
			return obj, nil
		}
		data, err := c.h.encodeStored(r, obj)
		if err != nil {
			return nil, unknownError(err)
		}
		rev, err := c.h.store.Update(ctx, key, data, kv.ModRevision)
		if err == storage.ErrConflict {
			continue
		}
		if err != nil {
			return nil, storeError(err, r.GroupResource(), name)
		}
		if acc, err := meta.Accessor(obj); err == nil {
			acc.SetResourceVersion(strconv.FormatInt(rev, 10))
		}
		return obj, nil
	}
}
