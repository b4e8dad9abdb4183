package namespace

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
)

func objectMeta(gvk schema.GroupVersionKind, namespace, name string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Finalizers: finalizers}}
}

// A namespace being deleted loses every namespaced resource discovery lists, pods first; while
// some remain (here held by a finalizer), kube's conditions say so and the namespace keeps its
// finalizer; once none remain it is finalized. Other namespaces are left alone.
func TestSync(t *testing.T) {
	now := metav1.Now()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &now},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	client := fake.NewClientset(ns)
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"list", "delete", "deletecollection"}},
			{Name: "namespaces", Kind: "Namespace", Verbs: metav1.Verbs{"list", "delete"}},
		}},
		{GroupVersion: "wardle.example.com/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "flunders", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"list", "delete"}}, // no deletecollection: one by one
		}},
	}
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	flunder := schema.GroupVersionKind{Group: "wardle.example.com", Version: "v1alpha1", Kind: "Flunder"}
	pod := corev1.SchemeGroupVersion.WithKind("Pod")
	md := metadatafake.NewSimpleMetadataClient(scheme,
		objectMeta(pod, "gone", "held", "example.com/hold"), objectMeta(flunder, "gone", "f1"), objectMeta(flunder, "kept", "f2"))
	c := &Controller{namespaces: client.CoreV1().Namespaces(), discovery: client.Discovery(), metadata: md, complete: func() bool { return true }, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	flunders := flunder.GroupVersion().WithResource("flunders")
	pods := corev1.SchemeGroupVersion.WithResource("pods")

	// The held pod stays (the fake's deletecollection deletes nothing, as a finalizer would).
	require.ErrorIs(t, c.sync(ctx, "gone", &discovered{}), errRemaining)
	got, err := client.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, got.Spec.Finalizers, corev1.FinalizerKubernetes, "content was there: not finalized yet")
	_, err = md.Resource(flunders).Namespace("gone").Get(ctx, "f1", metav1.GetOptions{})
	assert.NoError(t, err, "pods go first: the rest waits while any remain")

	condition := func(ct corev1.NamespaceConditionType) string {
		for _, c := range got.Status.Conditions {
			if c.Type == ct {
				return string(c.Status) + " " + c.Reason + ": " + c.Message
			}
		}
		return ""
	}
	assert.Equal(t, "True SomeResourcesRemain: Some resources are remaining: pods. has 1 resource instances", condition(corev1.NamespaceContentRemaining))
	assert.Equal(t, "True SomeFinalizersRemain: Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
		condition(corev1.NamespaceFinalizersRemaining))
	assert.Equal(t, "False ResourcesDiscovered: All resources successfully discovered", condition(corev1.NamespaceDeletionDiscoveryFailure))

	require.NoError(t, md.Resource(pods).Namespace("gone").Delete(ctx, "held", metav1.DeleteOptions{}))
	require.NoError(t, c.sync(ctx, "gone", &discovered{}))
	_, err = md.Resource(flunders).Namespace("gone").Get(ctx, "f1", metav1.GetOptions{})
	assert.Error(t, err, "deleted one by one")
	_, err = md.Resource(flunders).Namespace("kept").Get(ctx, "f2", metav1.GetOptions{})
	assert.NoError(t, err, "another namespace's content stays")
	got, err = client.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, got.Spec.Finalizers, corev1.FinalizerKubernetes, "finalized")
	assert.Equal(t, "False ContentRemoved: All content successfully removed", condition(corev1.NamespaceContentRemaining))

	// Without every service of the chain, discovery lacks its groups: nothing is decided.
	c.complete = func() bool { return false }
	other := ns.DeepCopy()
	other.Name = "other"
	_, err = client.CoreV1().Namespaces().Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.ErrorContains(t, c.sync(ctx, "other", &discovered{}), "the delegation chain is incomplete")
	require.NoError(t, c.sync(ctx, "gone", &discovered{}), "a finalized namespace is left alone")
}
