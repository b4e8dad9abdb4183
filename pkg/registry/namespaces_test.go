package registry

import (
	"context"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEnsureNamespacesIsIdempotent(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, testH.EnsureNamespaces(ctx, SystemNamespaces))
	uids := map[string]string{}
	for _, name := range SystemNamespaces {
		ns := get[*corev1.Namespace](t, nsResource, "", name)
		assert.Equal(t, corev1.NamespaceActive, ns.Status.Phase)
		assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, ns.Spec.Finalizers)
		uids[name] = string(ns.UID)
	}
	rev := currentRevision(t)
	require.NoError(t, testH.EnsureNamespaces(ctx, SystemNamespaces))
	assert.Equal(t, rev, currentRevision(t), "a second run writes nothing")
	for _, name := range SystemNamespaces {
		assert.Equal(t, uids[name], string(get[*corev1.Namespace](t, nsResource, "", name).UID))
	}

	// A backend that does not serve namespaces neither creates them nor checks them.
	noNS := NewHandler(testScheme, NewSet(configMapsResource()), testStore, stopAll)
	require.NoError(t, noNS.EnsureNamespaces(ctx, []string{"never-created"}))
	_, err := testH.Get(ctx, &resourcev1.GetRequest{Ref: ref(nsResource, "", "never-created")})
	requireStatus(t, err, 404, metav1.StatusReasonNotFound)
	_, err = noNS.Create(ctx, &resourcev1.CreateRequest{Ref: ref(cmResource, "never-created", ""), Body: jsonBody(t, configMap("x", nil)),
		Options: &resourcev1.WriteOptions{DryRun: []string{"All"}}})
	assert.NoError(t, err)
}

func TestNamespaceNameValidation(t *testing.T) {
	// Namespaces are DNS labels, so no dots.
	_, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(nsResource, "", ""),
		Body: jsonBody(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}})})
	st := requireStatus(t, err, 422, metav1.StatusReasonInvalid)
	assert.Equal(t, "metadata.name", st.Details.Causes[0].Field)
}

func TestNamespaceDeletionTerminates(t *testing.T) {
	name := newNamespace(t)
	create(t, cmResource, name, configMap("content", nil))
	resp, err := testH.Delete(context.Background(), &resourcev1.DeleteRequest{Ref: ref(nsResource, "", name)})
	require.NoError(t, err)
	assert.EqualValues(t, 200, resp.GetCode(), "kube answers 200 while finalizers hold the object")
	ns := &corev1.Namespace{}
	decode(t, resp.GetBody(), ns)
	assert.Equal(t, corev1.NamespaceTerminating, ns.Status.Phase)
	assert.NotNil(t, ns.DeletionTimestamp)
	assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, ns.Spec.Finalizers)

	stored := get[*corev1.Namespace](t, nsResource, "", name)
	assert.Equal(t, corev1.NamespaceTerminating, stored.Status.Phase)

	terminating, err := testH.List(context.Background(), &resourcev1.ListRequest{Ref: ref(nsResource, "", ""),
		Options: &resourcev1.ListOptions{FieldSelector: "status.phase=Terminating,metadata.name=" + name}})
	require.NoError(t, err)
	list := &corev1.NamespaceList{}
	decode(t, terminating.GetBody(), list)
	require.Len(t, list.Items, 1)

	// New content is refused by NamespaceLifecycle admission (pkg/admission); existing content stays until the namespace lifecycle controller deletes it.
	get[*corev1.ConfigMap](t, cmResource, name, "content")
}
