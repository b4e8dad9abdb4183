// Package remote reads, in one service, the kinds another service owns: a watch-fed copy of
// each (pkg/informer) through the owner's gRPC API, as a registry.Source, so the controllers
// and admission plugins that read them work the same whether the kind is local or not. Only
// the owner reads its kinds in etcd.
package remote

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/backend"
	"github.com/apichain/apichain/pkg/informer"
	"github.com/apichain/apichain/pkg/registry"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Chain is how the copies are fed, and how an object they lack is read: the owner's
// ResourceService through the chain's routing (routing.Client).
type Chain interface {
	informer.Reader
	informer.Getter
}

// Source is a registry.Source of kinds another service owns.
type Source struct {
	chain Chain
	kinds map[schema.GroupVersionResource]*kind
}

var _ registry.Source = (*Source)(nil)

type kind struct {
	r   *registry.Resource
	inf *informer.Informer

	mu       sync.Mutex
	watchers map[chan registry.Change]struct{}
}

// New copies resources (typed kinds: their New makes the object to decode) through chain; Run
// keeps the copies current.
func New(chain Chain, log *slog.Logger, resources ...*registry.Resource) *Source {
	s := &Source{chain: chain, kinds: map[schema.GroupVersionResource]*kind{}}
	for _, r := range resources {
		k := &kind{r: r, watchers: map[chan registry.Change]struct{}{}}
		decode := func(data []byte) (metav1.Object, error) {
			obj := r.New()
			if err := json.Unmarshal(data, obj); err != nil {
				return nil, err
			}
			return meta.Accessor(obj)
		}
		k.inf = informer.New(chain, ref(r, "", ""), decode, log, k.notify)
		s.kinds[r.GroupVersion.WithResource(r.Name)] = k
	}
	return s
}

// Install copies resources, which owner serves, for b: the copies are kept from the backend's
// start, and it is not ready before each was listed once (post-start hook
// <owner>-informers-synced), so no replica answers from an empty copy.
func Install(b *backend.Backend, owner string, resources ...*registry.Resource) (*Source, error) {
	s := New(b.Peers(), b.Log, resources...)
	return s, b.Server.AddPostStartHook(owner+"-informers-synced", func(ctx context.Context) error {
		go s.Run(ctx)
		return s.WaitSynced(ctx)
	})
}

// Run keeps every copy current until ctx ends.
func (s *Source) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, k := range s.kinds {
		wg.Go(func() { k.inf.Run(ctx) })
	}
	wg.Wait()
}

// WaitSynced returns once every copy was listed once, or with ctx's error.
func (s *Source) WaitSynced(ctx context.Context) error {
	for _, k := range s.kinds {
		select {
		case <-k.inf.Synced():
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", k.r.Name, ctx.Err())
		}
	}
	return nil
}

// Lookup finds a resource the source copies.
func (s *Source) Lookup(gvr schema.GroupVersionResource) (*registry.Resource, bool) {
	k, ok := s.kinds[gvr]
	if !ok {
		return nil, false
	}
	return k.r, true
}

func (s *Source) kind(r *registry.Resource) (*kind, error) {
	k, ok := s.kinds[r.GroupVersion.WithResource(r.Name)]
	if !ok {
		return nil, fmt.Errorf("%s are not copied here", r.Name)
	}
	return k, nil
}

// Get reads one object from the copy and, when the copy does not have it (yet: an object
// created a moment ago), from its owner.
func (s *Source) Get(ctx context.Context, r *registry.Resource, namespace, name string) (runtime.Object, error) {
	k, err := s.kind(r)
	if err != nil {
		return nil, err
	}
	if obj, ok := k.inf.Get(namespace, name); ok {
		return obj.(runtime.Object), nil
	}
	return s.GetLive(ctx, r, namespace, name)
}

// GetLive reads one object from its owner.
func (s *Source) GetLive(ctx context.Context, r *registry.Resource, namespace, name string) (runtime.Object, error) {
	obj := r.New()
	if err := informer.GetJSON(ctx, s.chain, ref(r, namespace, name), obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// List reads r's objects in namespace from the copy, in the owner's order (by namespace and
// name); fieldSelector may name metadata.name and metadata.namespace. The copy has applied
// every change Watch reported.
func (s *Source) List(_ context.Context, r *registry.Resource, namespace, fieldSelector string) ([]runtime.Object, error) {
	k, err := s.kind(r)
	if err != nil {
		return nil, err
	}
	sel := fields.Everything()
	if fieldSelector != "" {
		if sel, err = fields.ParseSelector(fieldSelector); err != nil {
			return nil, err
		}
		for _, req := range sel.Requirements() {
			if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
				return nil, fmt.Errorf("field selector %q: only metadata.name and metadata.namespace are supported here", req.Field)
			}
		}
	}
	var kept []metav1.Object
	for _, o := range k.inf.List() {
		if (namespace == "" || o.GetNamespace() == namespace) &&
			sel.Matches(fields.Set{"metadata.name": o.GetName(), "metadata.namespace": o.GetNamespace()}) {
			kept = append(kept, o)
		}
	}
	slices.SortFunc(kept, func(a, b metav1.Object) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	out := make([]runtime.Object, len(kept))
	for i, o := range kept {
		out[i] = o.(runtime.Object).DeepCopyObject()
	}
	return out, nil
}

// ListCached is List: the copy is the cache.
func (s *Source) ListCached(ctx context.Context, r *registry.Resource, namespace string) ([]runtime.Object, error) {
	return s.List(ctx, r, namespace, "")
}

// Watch reports the changes the copy of r applies, from now until ctx ends. A watcher that
// has not taken the last 100 misses the ones after: it has changes to read already.
func (s *Source) Watch(ctx context.Context, r *registry.Resource) <-chan registry.Change {
	ch := make(chan registry.Change, 100)
	k, err := s.kind(r)
	if err != nil {
		close(ch)
		return ch
	}
	k.mu.Lock()
	k.watchers[ch] = struct{}{}
	k.mu.Unlock()
	go func() {
		<-ctx.Done()
		k.mu.Lock()
		delete(k.watchers, ch)
		close(ch)
		k.mu.Unlock()
	}()
	return ch
}

func (k *kind) notify(ev informer.Event) {
	change := registry.Change{Deleted: ev.Type == "DELETED"}
	change.Deleting = !change.Deleted && ev.Object != nil && ev.Object.GetDeletionTimestamp() != nil
	k.mu.Lock()
	defer k.mu.Unlock()
	for ch := range k.watchers {
		select {
		case ch <- change:
		default:
		}
	}
}

func ref(r *registry.Resource, namespace, name string) *resourcev1.ResourceRef {
	return &resourcev1.ResourceRef{Group: r.GroupVersion.Group, Version: r.GroupVersion.Version, Resource: r.Name,
		Namespace: namespace, Name: name}
}
