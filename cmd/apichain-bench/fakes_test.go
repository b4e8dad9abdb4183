package main

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
	configMapGVK  = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	configMapsGR  = schema.GroupResource{Resource: "configmaps"}
)

// fakeServer is a fake clientset that behaves enough like a real server for the
// workload: lists are paginated (limit/continue) and label-filtered, and updates use
// optimistic concurrency (a stale resourceVersion gets a 409 Conflict). The fake's
// reactors run one at a time (testing.Fake holds its lock), so they need no locking
// of their own.
type fakeServer struct {
	*fake.Clientset
	rv        atomic.Int64
	conflicts atomic.Int64 // 409s returned for stale updates
	pages     atomic.Int64 // list pages served
}

func newFakeServer() *fakeServer {
	f := &fakeServer{Clientset: fake.NewSimpleClientset()}
	f.PrependReactor("list", "configmaps", f.list)
	f.PrependReactor("update", "configmaps", f.update)
	return f
}

func (f *fakeServer) list(action k8stesting.Action) (bool, runtime.Object, error) {
	la := action.(k8stesting.ListActionImpl)
	obj, err := f.Tracker().List(configMapsGVR, configMapGVK, la.GetNamespace())
	if err != nil {
		return true, nil, err
	}
	all := obj.(*corev1.ConfigMapList)
	var items []corev1.ConfigMap
	for _, cm := range all.Items {
		if la.GetListRestrictions().Labels.Matches(labels.Set(cm.Labels)) {
			items = append(items, cm)
		}
	}
	slices.SortFunc(items, func(a, b corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	opts := la.ListOptions
	from := 0
	if opts.Continue != "" {
		if from, err = strconv.Atoi(opts.Continue); err != nil {
			return true, nil, apierrors.NewBadRequest("bad continue token")
		}
	}
	out := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: all.ResourceVersion}}
	to := len(items)
	if opts.Limit > 0 && int64(to-from) > opts.Limit {
		to = from + int(opts.Limit)
		out.Continue = strconv.Itoa(to)
	}
	out.Items = items[from:to]
	f.pages.Add(1)
	return true, out, nil
}

func (f *fakeServer) update(action k8stesting.Action) (bool, runtime.Object, error) {
	obj := action.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
	cur, err := f.Tracker().Get(configMapsGVR, action.GetNamespace(), obj.Name)
	if err != nil {
		return true, nil, err
	}
	if cur.(*corev1.ConfigMap).ResourceVersion != obj.ResourceVersion {
		f.conflicts.Add(1)
		return true, nil, apierrors.NewConflict(configMapsGR, obj.Name, errors.New("the object has been modified"))
	}
	obj.ResourceVersion = strconv.FormatInt(f.rv.Add(1), 10)
	if err := f.Tracker().Update(configMapsGVR, obj, action.GetNamespace()); err != nil {
		return true, nil, err
	}
	return true, obj, nil
}

// counters returns the counter of each of the first n objects of namespace ns.
func (f *fakeServer) counters(t *testing.T, ns string, n int) (sum int) {
	t.Helper()
	for i := range n {
		obj, err := f.Tracker().Get(configMapsGVR, ns, objectName(i))
		if err != nil {
			t.Fatalf("get %s: %v", objectName(i), err)
		}
		c, err := strconv.Atoi(obj.(*corev1.ConfigMap).Data[counterKey])
		if err != nil {
			t.Fatal(err)
		}
		sum += c
	}
	return sum
}

// failFirst returns a reactor that fails the first k matching actions with err and
// lets the rest through; calls counts the failures returned.
func failFirst(k int64, err error, calls *atomic.Int64) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		if calls.Load() >= k {
			return false, nil, nil
		}
		calls.Add(1)
		return true, nil, err
	}
}

// failWhere fails the actions on the objects whose names match.
func failWhere(match func(name string) bool, err error) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		var name string
		switch a := a.(type) {
		case k8stesting.CreateAction:
			name = a.GetObject().(*corev1.ConfigMap).Name
		case k8stesting.GetAction:
			name = a.GetName()
		case k8stesting.UpdateAction:
			name = a.GetObject().(*corev1.ConfigMap).Name
		}
		if match(name) {
			return true, nil, err
		}
		return false, nil, nil
	}
}

var errInternal = apierrors.NewInternalError(errors.New("injected failure"))

// smallConfig is a workload that runs in milliseconds against a fake; it fits the
// fake watchers' 100-event buffers (20 events each).
func smallConfig() workloadConfig {
	cfg := defaultWorkloadConfig()
	cfg.Concurrency = 8
	cfg.Objects = 60
	cfg.Lists = 5
	cfg.ListPageSize = 25
	cfg.Updates = 200
	cfg.ConflictObjects = 3
	cfg.ConflictBackoff = wait.Backoff{Steps: 1000} // no waiting between attempts
	cfg.Watchers = 6
	cfg.WatchEvents = 20
	cfg.WatchTimeout = 10 * time.Second
	cfg.OpTimeout = 10 * time.Second
	return cfg
}

func fakeFactory(cs kubernetes.Interface) clientFactory {
	return func(string) (kubernetes.Interface, string, error) { return cs, "fake", nil }
}

func resultByOp(t *testing.T, rep *Report, op string) Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Operation == op {
			return r
		}
	}
	t.Fatalf("no %s result in %+v", op, rep.Results)
	return Result{}
}

func nsOf(t *testing.T, f *fakeServer) string {
	t.Helper()
	for _, a := range f.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "namespaces" {
			return a.(k8stesting.CreateAction).GetObject().(*corev1.Namespace).Name
		}
	}
	t.Fatal("no namespace was created")
	return ""
}

func table(rep *Report) string {
	var b strings.Builder
	rep.WriteTable(&b)
	return b.String()
}
