package namespace

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/controller/internal/controllertest"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var env *controllertest.Env

func TestMain(m *testing.M) { os.Exit(controllertest.Main(m, &env)) }

func TestRun(t *testing.T) {
	controllertest.Run(t, func(ctx context.Context) { Run(ctx, env.Client, env.Log) })
	ctx := context.Background()

	name := env.Namespace(t)
	keep := env.Namespace(t)
	env.Create(t, env.ConfigMaps, name, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}})
	env.Create(t, env.Deployments, name, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	env.Create(t, env.ConfigMaps, name, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}})
	env.Create(t, env.ConfigMaps, keep, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}})

	deleted, err := env.Client.Delete(ctx, env.Namespaces, "", name, nil)
	require.NoError(t, err)
	require.False(t, deleted, "the namespace waits for its finalizer")

	// Content goes; the held configmap waits on its finalizer, and so does the namespace.
	require.Eventually(t, func() bool {
		return env.Get(t, env.ConfigMaps, name, "plain") == nil && env.Get(t, env.Deployments, name, "web") == nil
	}, controllertest.WaitFor, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		return env.Get(t, env.ConfigMaps, name, "held").GetDeletionTimestamp() != nil
	}, controllertest.WaitFor, 10*time.Millisecond)
	ns := env.Get(t, env.Namespaces, "", name).(*corev1.Namespace)
	assert.Equal(t, corev1.NamespaceTerminating, ns.Status.Phase)
	assert.NotEmpty(t, ns.Spec.Finalizers)

	// Release the finalizer: the configmap goes, then the namespace.
	require.NoError(t, env.Client.Update(ctx, env.ConfigMaps, name, "held", "", func(obj runtime.Object) {
		obj.(*corev1.ConfigMap).Finalizers = nil
	}))
	require.Eventually(t, func() bool { return env.Get(t, env.Namespaces, "", name) == nil }, controllertest.WaitFor, 10*time.Millisecond)
	assert.Nil(t, env.Get(t, env.ConfigMaps, name, "held"))

	// Other namespaces are untouched.
	assert.NotNil(t, env.Get(t, env.ConfigMaps, keep, "plain"))
	assert.Equal(t, corev1.NamespaceActive, env.Get(t, env.Namespaces, "", keep).(*corev1.Namespace).Status.Phase)

	// The namespace name is free again.
	env.Create(t, env.Namespaces, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

func TestRunWithoutNamespaces(t *testing.T) {
	// A backend that does not serve namespaces has no namespace lifecycle.
	noNS := registry.NewClient(registry.NewHandler(nil, registry.NewSet(env.ConfigMaps), nil, nil))
	finished := make(chan struct{})
	go func() {
		Run(context.Background(), noNS, env.Log)
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(controllertest.WaitFor):
		t.Fatal("Run without namespaces should return at once")
	}
}
