package registry

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/apichain/apichain/pkg/caller"
	"github.com/apichain/apichain/pkg/openapi"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// fieldManagers track managedFields and run server-side apply for a Set's kinds, typed by
// the same OpenAPI schemas the backend publishes (so list merge keys match what clients see).
type fieldManagers struct {
	scheme *Scheme
	kinds  []openapi.Kind // the set's typed kinds
	mu     sync.Mutex
	// converters type a kind's objects, by kind name, built on its first write
	// (converterLocked).
	converters map[string]managedfields.TypeConverter
	// byResource: a custom resource rebuilt for a changed schema gets a new field manager.
	byResource map[fmKey]*managedfields.FieldManager
}

// fmKey names a field manager: the status subresource's records its entries as such.
type fmKey struct {
	r           *Resource
	subresource string
}

func newFieldManagers(s *Scheme, set *Set) *fieldManagers {
	return &fieldManagers{scheme: s, kinds: set.OpenAPIKinds(), converters: map[string]managedfields.TypeConverter{},
		byResource: map[fmKey]*managedfields.FieldManager{}}
}

// converterLocked types objects of the kind named kind in every group and version the set
// serves it (a field manager converts managedFields recorded at one version to another, and
// events.k8s.io's Events are core's): built from those kinds' schemas alone on first use.
// Typing every kind of the set at once took a fresh process's first write about 50 ms of CPU,
// on the path to ready (core's bootstrap writes); a kind alone takes a fraction of that.
func (f *fieldManagers) converterLocked(kind string) (managedfields.TypeConverter, error) {
	if tc, ok := f.converters[kind]; ok {
		return tc, nil
	}
	var kinds []openapi.Kind
	for _, k := range f.kinds {
		if k.Kind == kind {
			kinds = append(kinds, k)
		}
	}
	defs, err := openapi.V2Definitions(kinds)
	if err != nil {
		return nil, err
	}
	tc, err := managedfields.NewTypeConverter(defs, false)
	if err != nil {
		return nil, fmt.Errorf("type converter of %s: %w", kind, err)
	}
	f.converters[kind] = tc
	return tc, nil
}

// converter is converterLocked for callers without the lock.
func (f *fieldManagers) converter(kind string) (managedfields.TypeConverter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.converterLocked(kind)
}

// get is the field manager of r (or of its "status" subresource): typed by the set's schemas,
// or for a custom resource by its content, as kube's CRD field manager.
func (f *fieldManagers) get(r *Resource, subresource string) (*managedfields.FieldManager, error) {
	gvk := r.GroupVersion.WithKind(r.Kind)
	f.mu.Lock()
	defer f.mu.Unlock()
	key := fmKey{r, subresource}
	if fm, ok := f.byResource[key]; ok {
		return fm, nil
	}
	var fm *managedfields.FieldManager
	var err error
	if r.isUnstructured() {
		tc := r.TypeConverter
		if tc == nil {
			tc = deducedTypeConverter
		}
		fm, err = managedfields.NewDefaultCRDFieldManager(tc, unstructuredConvertor{}, nopDefaulter{}, unstructuredCreater{},
			gvk, gvk.GroupVersion(), subresource, nil)
	} else {
		var tc managedfields.TypeConverter
		if tc, err = f.converterLocked(r.Kind); err != nil {
			return nil, err
		}
		fm, err = managedfields.NewDefaultFieldManager(tc, f.scheme.Scheme, f.scheme.Scheme, f.scheme.Scheme, gvk, gvk.GroupVersion(), subresource, nil)
	}
	if err != nil {
		return nil, err
	}
	f.byResource[key] = fm
	return fm, nil
}

// scale is the field manager of scale subresources: autoscaling/v1 Scales, unstructured and
// typed by their content (the parent's replicas owners are mapped to and from it).
func (f *fieldManagers) scale() (*managedfields.FieldManager, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := fmKey{nil, "scale"}
	if fm, ok := f.byResource[key]; ok {
		return fm, nil
	}
	fm, err := managedfields.NewDefaultCRDFieldManager(deducedTypeConverter, unstructuredConvertor{}, nopDefaulter{}, unstructuredCreater{},
		scaleGVK, scaleGVK.GroupVersion(), "scale", nil)
	if err != nil {
		return nil, err
	}
	f.byResource[key] = fm
	return fm, nil
}

// track records manager's changes from live to next in next's managedFields. Tracking is
// best effort, as in kube: a failure leaves the write alone.
func (f *fieldManagers) track(r *Resource, subresource string, live, next runtime.Object, manager string) runtime.Object {
	if f == nil {
		return next
	}
	fm, err := f.get(r, subresource)
	if err != nil {
		return next
	}
	if manager == "" {
		manager = "unknown"
	}
	return fm.UpdateNoErrors(live, next, manager)
}

type managerKey struct{}

// managerOrUserAgent is kube's field manager of a write that is not an apply: the one it
// names, else its client's User-Agent up to the first "/" (printable characters, at most 128:
// "kubectl", "curl", "grpc-go").
func managerOrUserAgent(ctx context.Context, manager string) string {
	if manager != "" {
		return manager
	}
	prefix, _, _ := strings.Cut(caller.UserAgent(ctx), "/")
	var b strings.Builder
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len() >= 128 {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// withManager names the field manager of a write, for managedFields.
// WithFieldManager names the field manager of the Client writes made with ctx (an in-process
// controller's, as kube's loopback clients name theirs).
func WithFieldManager(ctx context.Context, manager string) context.Context {
	return withManager(ctx, manager)
}

func withManager(ctx context.Context, manager string) context.Context {
	return context.WithValue(ctx, managerKey{}, manager)
}

func managerFrom(ctx context.Context) string {
	m, _ := ctx.Value(managerKey{}).(string)
	return m
}

// managers returns the handler's field managers.
func (h *Handler) managers() *fieldManagers {
	h.fmOnce.Do(func() { h.fm = newFieldManagers(h.scheme, h.set.Load()) })
	return h.fm
}

type appliedKey struct{}

// withApplied marks a write whose managedFields server-side apply already computed.
func withApplied(ctx context.Context) context.Context {
	return context.WithValue(ctx, appliedKey{}, true)
}

func isApplied(ctx context.Context) bool { v, _ := ctx.Value(appliedKey{}).(bool); return v }
