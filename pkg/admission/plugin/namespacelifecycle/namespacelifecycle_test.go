package namespacelifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// namespaceSource is a registry.Source of namespaces: a cache (cached) in front of what is
// stored (stored), counting live reads.
type namespaceSource struct {
	cached, stored map[string]*corev1.Namespace
	live           int
}

var nsResource = registry.Namespaces()

func (s *namespaceSource) Lookup(gvr schema.GroupVersionResource) (*registry.Resource, bool) {
	return nsResource, gvr == corev1.SchemeGroupVersion.WithResource("namespaces")
}

func (s *namespaceSource) Get(ctx context.Context, r *registry.Resource, namespace, name string) (runtime.Object, error) {
	if ns, ok := s.cached[name]; ok {
		return ns, nil
	}
	return s.GetLive(ctx, r, namespace, name)
}

func (s *namespaceSource) GetLive(_ context.Context, _ *registry.Resource, _, name string) (runtime.Object, error) {
	s.live++
	if ns, ok := s.stored[name]; ok {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
}

func (s *namespaceSource) List(context.Context, *registry.Resource, string, string) ([]runtime.Object, error) {
	panic("not used")
}

func (s *namespaceSource) ListCached(context.Context, *registry.Resource, string) ([]runtime.Object, error) {
	panic("not used")
}

func (s *namespaceSource) Watch(context.Context, *registry.Resource) <-chan registry.Change {
	panic("not used")
}

func ns(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func attrs(op admission.Operation, kind schema.GroupVersionKind, gvr schema.GroupVersionResource, namespace, name string, obj runtime.Object) admission.Attributes {
	return admission.NewAttributesRecord(obj, nil, kind, namespace, name, gvr, "", op, nil, false, nil)
}

func widget(namespace, name, generateName string) admission.Attributes {
	u := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, GenerateName: generateName}}
	return attrs(admission.Create, widgets.GroupVersion().WithKind("Widget"), widgets, namespace, name, u)
}

// kube's NamespaceLifecycle, for any namespaced kind (a custom resource here): 404 for the
// namespace when it does not exist, 403 with kube's message and cause while it terminates,
// immortal namespaces, and a live read only on a cache miss.
func TestNamespaceLifecycle(t *testing.T) {
	src := &namespaceSource{
		cached: map[string]*corev1.Namespace{"active": ns("active", corev1.NamespaceActive), "ending": ns("ending", corev1.NamespaceTerminating)},
		stored: map[string]*corev1.Namespace{"active": ns("active", corev1.NamespaceActive), "ending": ns("ending", corev1.NamespaceTerminating),
			"fresh": ns("fresh", corev1.NamespaceActive)},
	}
	l := New(src)
	ctx := context.Background()

	require.NoError(t, l.Admit(ctx, widget("active", "w", "")))
	assert.Zero(t, src.live, "a cached namespace costs no live read")

	require.NoError(t, l.Admit(ctx, widget("fresh", "w", "")), "a namespace the cache has not seen yet is read live")
	assert.Equal(t, 1, src.live)

	err := l.Admit(ctx, widget("missing", "w", ""))
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Equal(t, `namespaces "missing" not found`, err.Error())

	err = l.Admit(ctx, widget("ending", "w", ""))
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Equal(t, `widgets.example.com "w" is forbidden: unable to create new content in namespace ending because it is being terminated`, err.Error())
	st := err.(apierrors.APIStatus).Status()
	require.NotNil(t, st.Details)
	assert.Contains(t, st.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Message: "namespace ending is being terminated", Field: "metadata.namespace"})

	err = l.Admit(ctx, widget("ending", "", "w-"))
	assert.Equal(t, `widgets.example.com "w-" is forbidden: unable to create new content in namespace ending because it is being terminated`, err.Error(),
		"a generated name is named by its prefix")

	// Updates in a terminating namespace, and deletes anywhere, go through; an update in a
	// missing namespace does not.
	update := attrs(admission.Update, widgets.GroupVersion().WithKind("Widget"), widgets, "ending", "w", nil)
	assert.NoError(t, l.Admit(ctx, update))
	assert.NoError(t, l.Admit(ctx, attrs(admission.Delete, widgets.GroupVersion().WithKind("Widget"), widgets, "missing", "w", nil)))
	assert.True(t, apierrors.IsNotFound(l.Admit(ctx, attrs(admission.Update, widgets.GroupVersion().WithKind("Widget"), widgets, "missing", "w", nil))))

	// Cluster-scoped kinds are not checked.
	assert.NoError(t, l.Admit(ctx, attrs(admission.Create, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Cluster"},
		schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "clusters"}, "", "c", nil)))
}

func TestNamespaceLifecycleImmortalNamespaces(t *testing.T) {
	l := New(&namespaceSource{})
	nsKind, nsGVR := corev1.SchemeGroupVersion.WithKind("Namespace"), corev1.SchemeGroupVersion.WithResource("namespaces")
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		err := l.Admit(context.Background(), attrs(admission.Delete, nsKind, nsGVR, "", name, nil))
		require.True(t, apierrors.IsForbidden(err), "%s: %v", name, err)
		assert.Equal(t, `namespaces "`+name+`" is forbidden: this namespace may not be deleted`, err.Error())
	}
	assert.NoError(t, l.Admit(context.Background(), attrs(admission.Delete, nsKind, nsGVR, "", "kube-node-lease", nil)))
}

// A namespace whose delete this server admitted is read live while the cache still says it
// is active (the cache has not seen the delete yet), for 30 s.
func TestNamespaceLifecycleReadsLiveAfterItsDelete(t *testing.T) {
	src := &namespaceSource{cached: map[string]*corev1.Namespace{"x": ns("x", corev1.NamespaceActive)},
		stored: map[string]*corev1.Namespace{"x": ns("x", corev1.NamespaceTerminating)}}
	l := New(src)
	now := time.Now()
	l.now = func() time.Time { return now }
	ctx := context.Background()
	require.NoError(t, l.Admit(ctx, widget("x", "before", "")), "the cache says active")
	require.Zero(t, src.live)

	require.NoError(t, l.Admit(ctx, attrs(admission.Delete, corev1.SchemeGroupVersion.WithKind("Namespace"), corev1.SchemeGroupVersion.WithResource("namespaces"), "", "x", nil)))
	assert.True(t, apierrors.IsForbidden(l.Admit(ctx, widget("x", "after", ""))), "read live: terminating")
	assert.Equal(t, 1, src.live)

	now = now.Add(31 * time.Second)
	assert.NoError(t, l.Admit(ctx, widget("x", "later", "")), "back to the cache")
	assert.Equal(t, 1, src.live)
}
