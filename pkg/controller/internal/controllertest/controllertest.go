// Package controllertest runs the controllers' tests against the real registry: one embedded
// etcd per test binary and a handler serving namespaces, configmaps and deployments.
package controllertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/embedded/embeddedtest"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Env is what the tests use: the handler serves requests as a client would send them, and
// Client is what the controllers get.
type Env struct {
	Handler *registry.Handler
	Client  *registry.Client
	Log     *slog.Logger

	Namespaces, ConfigMaps, Deployments, Pods, Nodes *registry.Resource
}

// WaitFor bounds every wait for a controller to act.
const WaitFor = 10 * time.Second

// Main starts etcd and the registry, sets *env and runs the tests; TestMain exits with what
// it returns.
func Main(m *testing.M, env **Env) int {
	endpoints, stopEtcd, err := embeddedtest.Etcd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopEtcd()
	client, err := storage.NewClient(endpoints, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer client.Close()
	scheme, err := registry.NewScheme(corev1.AddToScheme, appsv1.AddToScheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e := &Env{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Namespaces: registry.Namespaces(),
		ConfigMaps: &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "configmaps", SingularName: "configmap",
			Kind: "ConfigMap", Namespaced: true, New: func() runtime.Object { return &corev1.ConfigMap{} },
			NewList: func() runtime.Object { return &corev1.ConfigMapList{} }},
		Deployments: &registry.Resource{GroupVersion: appsv1.SchemeGroupVersion, Name: "deployments", SingularName: "deployment",
			Kind: "Deployment", Namespaced: true, HasSpec: true, New: func() runtime.Object { return &appsv1.Deployment{} },
			NewList: func() runtime.Object { return &appsv1.DeploymentList{} }},
		Pods: &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "pods", SingularName: "pod",
			Kind: "Pod", Namespaced: true, HasSpec: true, Subresources: []string{"status"}, New: func() runtime.Object { return &corev1.Pod{} },
			NewList: func() runtime.Object { return &corev1.PodList{} }, GracefulDelete: podGracefulDelete},
		Nodes: &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "nodes", SingularName: "node",
			Kind: "Node", HasSpec: true, Subresources: []string{"status"}, New: func() runtime.Object { return &corev1.Node{} },
			NewList: func() runtime.Object { return &corev1.NodeList{} }},
	}
	stopping := make(chan struct{})
	defer close(stopping)
	e.Handler = registry.NewHandler(scheme, registry.NewSet(e.Namespaces, e.ConfigMaps, e.Deployments, e.Pods, e.Nodes), storage.NewStore(client, storage.DefaultPrefix), stopping)
	e.Client = registry.NewClient(e.Handler)
	*env = e
	return m.Run()
}

// podGracefulDelete is core's rule in short: a pod on a node gets the grace asked for or 30 s,
// one never scheduled none.
func podGracefulDelete(o runtime.Object, opts *metav1.DeleteOptions) bool {
	period := int64(30)
	if opts.GracePeriodSeconds != nil {
		period = *opts.GracePeriodSeconds
	}
	if o.(*corev1.Pod).Spec.NodeName == "" {
		period = 0
	}
	opts.GracePeriodSeconds = &period
	return true
}

// Run runs a controller until the test ends.
func Run(t *testing.T, controller func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		controller(ctx)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
}

var namespaces atomic.Int64

// Namespace creates a fresh namespace, so tests do not see each other's objects.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%d", namespaces.Add(1), os.Getpid())
	e.Create(t, e.Namespaces, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return name
}

// Create creates obj as a client's POST would and returns what was stored.
func (e *Env) Create(t testing.TB, r *registry.Resource, namespace string, obj runtime.Object) metav1.Object {
	t.Helper()
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	ref := &resourcev1.ResourceRef{Group: r.GroupVersion.Group, Version: r.GroupVersion.Version, Resource: r.Name, Namespace: namespace}
	resp, err := e.Handler.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref,
		Body: &resourcev1.Body{ContentType: registry.MediaJSON, Data: data}})
	require.NoError(t, err)
	out := r.New()
	require.NoError(t, json.Unmarshal(resp.GetBody().GetData(), out))
	acc, err := meta.Accessor(out)
	require.NoError(t, err)
	return acc
}

// Get reads an object, or nil when there is none.
func (e *Env) Get(t testing.TB, r *registry.Resource, namespace, name string) metav1.Object {
	t.Helper()
	items, err := e.Client.List(context.Background(), r, namespace, "metadata.name="+name)
	require.NoError(t, err)
	if len(items) == 0 {
		return nil
	}
	acc, err := meta.Accessor(items[0])
	require.NoError(t, err)
	return acc
}
