package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/embedded/embeddedtest"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/storage"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// One embedded etcd serves the whole package (tests and fuzz targets).
var (
	testScheme *Scheme
	testClient *clientv3.Client
	testStore  *storage.Store
	testH      *Handler
	// testCachedH serves the same store with the watch cache on, as core runs.
	testCachedH *Handler
	testSet     *Set
	stopAll     = make(chan struct{})

	nsResource, cmResource, deployResource, nodeResource, podResource, widgetResource *Resource
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	endpoints, stopEtcd, err := embeddedtest.Etcd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopEtcd()
	testClient, err = storage.NewClient(endpoints, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testClient.Close()
	testStore = storage.NewStore(testClient, storage.DefaultPrefix)
	testScheme, err = NewScheme(corev1.AddToScheme, appsv1.AddToScheme, autoscalingv1.AddToScheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	nsResource, cmResource, deployResource, nodeResource = Namespaces(), configMapsResource(), deploymentsResource(), nodesResource()
	widgetResource, podResource = widgetsResource(), podsResource()
	testSet = NewSet(nsResource, cmResource, deployResource, nodeResource, podResource, widgetResource)
	testH = NewHandler(testScheme, testSet, testStore, stopAll)
	defer close(stopAll)
	cacheCtx, stopCaches := context.WithCancel(context.Background())
	defer stopCaches()
	testCachedH = NewHandler(testScheme, testSet, testStore, stopAll)
	testCachedH.EnableWatchCache(cacheCtx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return m.Run()
}

func newObj[T any, PT interface {
	*T
	runtime.Object
}]() func() runtime.Object {
	return func() runtime.Object { return PT(new(T)) }
}

// configMapsResource is core's configmaps: key names and immutability.
func configMapsResource() *Resource {
	return &Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "configmaps", SingularName: "configmap",
		Kind: "ConfigMap", Namespaced: true, New: newObj[corev1.ConfigMap](), NewList: newObj[corev1.ConfigMapList](),
		Validate: func(o runtime.Object) field.ErrorList {
			var errs field.ErrorList
			for k := range o.(*corev1.ConfigMap).Data {
				for _, msg := range validation.IsConfigMapKey(k) {
					errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, msg))
				}
			}
			return errs
		},
		ValidateUpdate: func(o, old runtime.Object) field.ErrorList {
			cm, oc := o.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
			if oc.Immutable == nil || !*oc.Immutable {
				return nil
			}
			var errs field.ErrorList
			if cm.Immutable == nil || !*cm.Immutable {
				errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
			}
			if fmt.Sprint(cm.Data) != fmt.Sprint(oc.Data) || fmt.Sprint(cm.BinaryData) != fmt.Sprint(oc.BinaryData) {
				errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{{Name: "Data", Type: "string"}, AgeColumn},
		Cells: func(o runtime.Object) []any {
			cm := o.(*corev1.ConfigMap)
			return []any{int64(len(cm.Data) + len(cm.BinaryData)), AgeCell(o)}
		},
	}
}

// deploymentsResource has a spec, a status and a scale subresource.
func deploymentsResource() *Resource {
	return &Resource{GroupVersion: appsv1.SchemeGroupVersion, Name: "deployments", SingularName: "deployment",
		Kind: "Deployment", Namespaced: true, Subresources: []string{"scale", "status"}, HasSpec: true,
		New: newObj[appsv1.Deployment](), NewList: newObj[appsv1.DeploymentList](),
		Default: func(o runtime.Object) {
			d := o.(*appsv1.Deployment)
			if d.Spec.Replicas == nil {
				one := int32(1)
				d.Spec.Replicas = &one
			}
		},
	}
}

// nodesResource is cluster-scoped.
func nodesResource() *Resource {
	return &Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "nodes", SingularName: "node", Kind: "Node",
		Subresources: []string{"status"}, HasSpec: true, New: newObj[corev1.Node](), NewList: newObj[corev1.NodeList]()}
}

// podsResource is deleted gracefully, as core's pods are: with their grace period once they
// are on a node, at once before.
func podsResource() *Resource {
	return &Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true,
		Subresources: []string{"status"}, HasSpec: true, New: newObj[corev1.Pod](), NewList: newObj[corev1.PodList](),
		GracefulDelete: func(o runtime.Object, opts *metav1.DeleteOptions) bool {
			p := o.(*corev1.Pod)
			period := int64(30)
			if opts.GracePeriodSeconds != nil {
				period = *opts.GracePeriodSeconds
			}
			if p.Spec.NodeName == "" {
				period = 0
			}
			opts.GracePeriodSeconds = &period
			return true
		}}
}

// --- helpers

var nsCounter atomic.Int64

// newNamespace creates a fresh namespace so tests do not see each other's objects.
func newNamespace(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%d", nsCounter.Add(1), os.Getpid())
	_, err := testH.Create(context.Background(), &resourcev1.CreateRequest{
		Ref:  ref(nsResource, "", ""),
		Body: jsonBody(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}),
	})
	require.NoError(t, err)
	return name
}

func ref(r *Resource, namespace, name string) *resourcev1.ResourceRef {
	return &resourcev1.ResourceRef{Group: r.GroupVersion.Group, Version: r.GroupVersion.Version, Resource: r.Name,
		Namespace: namespace, Name: name}
}

func subRef(r *Resource, namespace, name, sub string) *resourcev1.ResourceRef {
	rf := ref(r, namespace, name)
	rf.Subresource = sub
	return rf
}

func jsonBody(t testing.TB, obj any) *resourcev1.Body {
	t.Helper()
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	return &resourcev1.Body{ContentType: MediaJSON, Data: data}
}

// decode reads a response body of any served media type into into.
func decode(t testing.TB, body *resourcev1.Body, into runtime.Object) {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(testScheme.Codecs.SupportedMediaTypes(), body.GetContentType())
	require.True(t, ok, "content type %q", body.GetContentType())
	_, _, err := info.Serializer.Decode(body.GetData(), nil, into)
	require.NoError(t, err, "decoding %s", body.GetData())
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}}}
}

// create writes obj into namespace and returns the created object.
func create[T runtime.Object](t testing.TB, r *Resource, namespace string, obj T) T {
	t.Helper()
	resp, err := testH.Create(context.Background(), &resourcev1.CreateRequest{Ref: ref(r, namespace, ""), Body: jsonBody(t, obj)})
	require.NoError(t, err)
	require.EqualValues(t, 201, resp.GetCode())
	out := r.New().(T)
	decode(t, resp.GetBody(), out)
	return out
}

func get[T runtime.Object](t testing.TB, r *Resource, namespace, name string) T {
	t.Helper()
	resp, err := testH.Get(context.Background(), &resourcev1.GetRequest{Ref: ref(r, namespace, name)})
	require.NoError(t, err)
	out := r.New().(T)
	decode(t, resp.GetBody(), out)
	return out
}

func update[T runtime.Object](t testing.TB, r *Resource, namespace, name string, obj T) (T, error) {
	t.Helper()
	resp, err := testH.Update(context.Background(), &resourcev1.UpdateRequest{Ref: ref(r, namespace, name), Body: jsonBody(t, obj)})
	out := r.New().(T)
	if err == nil {
		decode(t, resp.GetBody(), out)
	}
	return out, err
}

// kubeStatus is the kube Status an error carries; it fails the test for a non-error.
func kubeStatus(t testing.TB, err error) *metav1.Status {
	t.Helper()
	require.Error(t, err)
	require.False(t, rpcstatus.IsNotServed(err), "unexpected not-served: %v", err)
	return rpcstatus.ToKube(err)
}

// requireStatus checks an error's kube code and reason.
func requireStatus(t testing.TB, err error, code int32, reason metav1.StatusReason) *metav1.Status {
	t.Helper()
	st := kubeStatus(t, err)
	require.Equal(t, code, st.Code, "status: %+v", st)
	if reason != "" {
		require.Equal(t, reason, st.Reason, "status: %+v", st)
	}
	require.Equal(t, "Status", st.Kind)
	require.Equal(t, metav1.StatusFailure, st.Status)
	return st
}

func currentRevision(t testing.TB) int64 {
	t.Helper()
	rev, err := testStore.CurrentRevision(context.Background())
	require.NoError(t, err)
	return rev
}

// fakeWatchStream collects a Watch's messages on a channel.
type fakeWatchStream struct {
	grpc.ServerStream
	ctx context.Context
	ch  chan *resourcev1.WatchResponse
}

func (s *fakeWatchStream) Send(m *resourcev1.WatchResponse) error {
	select {
	case s.ch <- m:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

func (s *fakeWatchStream) Context() context.Context { return s.ctx }

var _ grpc.ServerStreamingServer[resourcev1.WatchResponse] = (*fakeWatchStream)(nil)

func ptrTo[T any](v T) *T { return &v }

// readers runs a read-path test against etcd directly and through the watch cache (warmed
// first, so what the test writes afterwards is in the cache's window).
func readers(t *testing.T, test func(t *testing.T, h *Handler)) {
	t.Run("etcd", func(t *testing.T) { test(t, testH) })
	t.Run("cache", func(t *testing.T) {
		for _, r := range testSet.order {
			_, err := testCachedH.List(context.Background(), &resourcev1.ListRequest{Ref: ref(r, "", ""),
				Options: &resourcev1.ListOptions{LabelSelector: "warm-up"}})
			require.NoError(t, err)
		}
		test(t, testCachedH)
	})
}

// cacheWatchers counts the watchers r's watch cache serves.
func cacheWatchers(h *Handler, r *Resource) int {
	cs := h.caches.Load()
	if cs == nil {
		return 0
	}
	cs.mu.Lock()
	c := cs.m[r]
	cs.mu.Unlock()
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watchers)
}
