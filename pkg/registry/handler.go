package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apichain/apichain/pkg/spans"
	"k8s.io/apimachinery/pkg/api/meta"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Handler serves a Set of resources as the ResourceService.
type Handler struct {
	resourcev1.UnimplementedResourceServiceServer
	scheme   *Scheme
	set      atomic.Pointer[Set]
	store    *storage.Store
	stopping <-chan struct{}
	now      func() time.Time
	// storageMedia is the media type objects are written in (kube's --storage-media-type).
	storageMedia string

	caches atomic.Pointer[caches]

	admission Admission

	fmOnce sync.Once
	fm     *fieldManagers
}

// NewHandler serves set from store; watches end when stopping closes.
func NewHandler(scheme *Scheme, set *Set, store *storage.Store, stopping <-chan struct{}) *Handler {
	h := &Handler{scheme: scheme, store: store, stopping: stopping, now: time.Now, storageMedia: MediaProtobuf}
	h.set.Store(set)
	return h
}

// StorageMediaTypes are the media types objects may be stored in, the first the default:
// kube's --storage-media-type (custom resources, which have no protobuf form, are JSON).
var StorageMediaTypes = []string{MediaProtobuf, MediaJSON, MediaYAML}

// SetStorageMediaType sets the media type objects are written in, before the handler serves;
// objects are read in either.
func (h *Handler) SetStorageMediaType(media string) error {
	if !slices.Contains(StorageMediaTypes, media) {
		return fmt.Errorf("storage media type %q is not one of %s", media, strings.Join(StorageMediaTypes, ", "))
	}
	h.storageMedia = media
	return nil
}

// SetResources replaces the served set (extensions' custom resources come and go with their
// CRDs); requests already looked up finish with the set they started with.
// The watch caches of resources no longer served stop, ending their watches.
func (h *Handler) SetResources(set *Set) {
	h.set.Store(set)
	h.dropCaches(set)
}

// Resources is the served set.
func (h *Handler) Resources() *Set { return h.set.Load() }

// Owns reports whether key (or a key prefix) belongs to a stored resource of the served set:
// the backend's storage guard asks it, so that a service stores only the kinds it serves.
func (h *Handler) Owns(key string) bool {
	_, ok := h.ResourceOf(key)
	return ok
}

// ResourceOf names the stored resource of the served set whose objects are kept under key
// (or a key prefix): the store's layout, for encryption and metrics.
func (h *Handler) ResourceOf(key string) (schema.GroupResource, bool) {
	return resourceOf(h.set.Load().prefixes, key)
}

// lookup finds the resource of a request; one this backend does not serve is "not served",
// so the gateway asks the next delegate.
func (h *Handler) lookup(ctx context.Context, ref *resourcev1.ResourceRef, verb string, allowSub ...string) (*Resource, error) {
	gvr := schema.GroupVersionResource{Group: ref.GetGroup(), Version: ref.GetVersion(), Resource: ref.GetResource()}
	r, ok := h.set.Load().Lookup(gvr)
	if !ok {
		return nil, rpcstatus.NotServed(gvr.String())
	}
	if ref.GetSubresource() == "" && !slices.Contains(r.Verbs(), verb) {
		return nil, methodNotAllowed()
	}
	if r.Review {
		return nil, apierrors.NewMethodNotSupported(r.GroupResource(), "this review is answered by the gateway")
	}
	if sub := ref.GetSubresource(); sub != "" {
		allowed := (verb == "create" && r.Actions[sub] != nil || verb != "create" && r.Merges[sub] != nil) && r.hasSubresource(sub)
		for _, a := range allowSub {
			allowed = allowed || (a == sub && r.hasSubresource(sub))
		}
		if !allowed {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: gvr.Group, Resource: gvr.Resource + "/" + sub}, ref.GetName())
		}
	}
	// A namespaced object has no path without its namespace; a list or watch across namespaces
	// names its objects with a metadata.name field selector, which is no such path.
	if r.Namespaced && ref.GetNamespace() == "" && ref.GetName() != "" && verb != "list" && verb != "watch" {
		return nil, apierrors.NewNotFound(r.GroupResource(), ref.GetName())
	}
	if w := r.deprecation(); w != "" {
		AddWarnings(ctx, w) // as kube warns on every request to a deprecated kind
	}
	return r, nil
}

// respond encodes obj as the client asked.
func (h *Handler) respond(r *Resource, obj runtime.Object, enc *resourcev1.Encoding) (*resourcev1.Body, error) {
	out, err := negotiate(enc.GetAccept(), enc.GetPretty(), noProtobuf(r.New()))
	if err != nil {
		return nil, err
	}
	return h.respondAs(r, obj, out)
}

// respondAs encodes obj in out.
func (h *Handler) respondAs(r *Resource, obj runtime.Object, out output) (*resourcev1.Body, error) {
	converted, err := h.convert(r, obj, out)
	if err != nil {
		return nil, err
	}
	data, err := h.scheme.encode(converted, r.GroupVersion, out)
	if err != nil {
		return nil, err
	}
	return &resourcev1.Body{ContentType: out.contentType(), Data: data}, nil
}

func (h *Handler) convert(r *Resource, obj runtime.Object, out output) (runtime.Object, error) {
	switch out.kind {
	case asTable:
		return h.table(r, obj, true)
	case asPartialMetadata:
		return partialMetadata(obj)
	}
	return obj, nil
}

// Get reads one object (or its status or scale) at the request's resourceVersion.
func (h *Handler) Get(ctx context.Context, req *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	r, err := h.lookup(ctx, req.GetRef(), "get", "status", "scale")
	if err != nil {
		return nil, toGRPC(err)
	}
	spans.Event(ctx, "About to Get from storage")
	obj, err := h.get(ctx, r, req.GetRef().GetNamespace(), req.GetRef().GetName(), req.GetResourceVersion())
	if err != nil {
		return nil, toGRPC(err)
	}
	if req.GetRef().GetSubresource() == "scale" {
		if obj, err = toScale(r, obj); err != nil {
			return nil, toGRPC(err)
		}
	}
	spans.Event(ctx, "About to write a response")
	body, err := h.respond(r, obj, req.GetEncoding())
	if err != nil {
		return nil, toGRPC(err)
	}
	return &resourcev1.GetResponse{Body: body}, nil
}

// get reads one object as kube's cache delegator and etcd3 store do for a GET with
// resourceVersion rv: "" is the most recent, read from etcd. Any other value is "not older
// than": a synced watch cache serves it once it has seen rv (waiting up to blockTimeout);
// otherwise etcd serves its latest unless rv is ahead of it. Since the latest is never too
// old, a GET has no 410 Gone.
func (h *Handler) get(ctx context.Context, r *Resource, namespace, name, rv string) (runtime.Object, error) {
	if r.Computed != nil {
		items, err := r.Computed(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range items {
			if acc, err := meta.Accessor(o); err == nil && acc.GetName() == name {
				return o, nil
			}
		}
		return nil, apierrors.NewNotFound(r.GroupResource(), name)
	}
	if rv != "" { // "" is a quorum read from etcd, as in kube
		if c := h.cache(r); c != nil {
			if obj, err := c.get(ctx, namespace, name, rv); err != errCacheNotReady {
				return obj, err
			}
		}
	}
	kv, rev, err := h.store.Get(ctx, key(r, namespace, name), 0)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, storeError(err, r.GroupResource(), name)
	}
	// kube's validateMinimumResourceVersion, which comes before whether the object exists.
	if rv != "" {
		minimum, perr := parseMinimumRV(rv)
		if perr != nil {
			return nil, apierrors.NewBadRequest("invalid resource version: " + perr.Error())
		}
		if minimum > uint64(rev) {
			return nil, tooLargeResourceVersion(minimum, uint64(rev), 0)
		}
	}
	if err != nil {
		return nil, storeError(err, r.GroupResource(), name)
	}
	obj, err := h.decodeStored(r, kv.Value, kv.ModRevision)
	if err != nil { // kube names the key below its storage prefix
		return nil, apierrors.NewInternalError(errors.New(corruptObject(kv.Key, kv.ModRevision, err)))
	}
	return obj, nil
}
