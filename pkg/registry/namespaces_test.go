package registry

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	finished := make(chan struct{})
	go func() {
		noNS.RunNamespaceFinalizer(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(waitFor):
		t.Fatal("RunNamespaceFinalizer without namespaces should return at once")
	}
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

	_, err = testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(cmResource, name, ""), Body: jsonBody(t, configMap("late", nil))})
	requireStatus(t, err, 403, metav1.StatusReasonForbidden)
	// Existing content is still there until the finalizer runs.
	get[*corev1.ConfigMap](t, cmResource, name, "content")
}

func TestRunNamespaceFinalizer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		testH.RunNamespaceFinalizer(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})

	name := newNamespace(t)
	keep := newNamespace(t)
	create(t, cmResource, name, configMap("plain", nil))
	create(t, deployResource, name, deployment("web", 1))
	held := configMap("held", nil)
	held.Finalizers = []string{"example.com/hold"}
	create(t, cmResource, name, held)
	create(t, cmResource, keep, configMap("plain", nil))

	_, err := testH.Delete(context.Background(), &resourcev1.DeleteRequest{Ref: ref(nsResource, "", name)})
	require.NoError(t, err)

	notFound := func(r *Resource, ns, n string) bool {
		_, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(r, ns, n)})
		return apierrors.IsNotFound(errorFromStatus(err))
	}
	// Content goes; the held configmap waits on its finalizer, and so does the namespace.
	require.Eventually(t, func() bool {
		return notFound(cmResource, name, "plain") && notFound(deployResource, name, "web")
	}, waitFor, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		return get[*corev1.ConfigMap](t, cmResource, name, "held").DeletionTimestamp != nil
	}, waitFor, 10*time.Millisecond)
	ns := get[*corev1.Namespace](t, nsResource, "", name)
	assert.Equal(t, corev1.NamespaceTerminating, ns.Status.Phase)
	assert.NotEmpty(t, ns.Spec.Finalizers)

	// Release the finalizer: the configmap goes, then the namespace.
	_, err = patch(cmResource, name, "held", mergePatchType, `{"metadata":{"finalizers":null}}`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return notFound(nsResource, "", name) }, waitFor, 10*time.Millisecond)
	assert.True(t, notFound(cmResource, name, "held"))

	// Other namespaces are untouched.
	get[*corev1.ConfigMap](t, cmResource, keep, "plain")
	assert.Equal(t, corev1.NamespaceActive, get[*corev1.Namespace](t, nsResource, "", keep).Status.Phase)

	// The namespace name is free again.
	_, err = testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(nsResource, "", ""),
		Body: jsonBody(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})})
	require.NoError(t, err)
}

// errorFromStatus turns a handler error back into a kube StatusError.
func errorFromStatus(err error) error {
	if err == nil {
		return nil
	}
	st := rpcstatus.ToKube(err)
	return &apierrors.StatusError{ErrStatus: *st}
}
