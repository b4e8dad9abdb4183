package remote

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// owner is a fake owner's ResourceService: a list of ConfigMaps, a watch fed by events, and
// gets of what it stores.
type owner struct {
	mu      sync.Mutex
	stored  map[string]*corev1.ConfigMap
	events  chan *resourcev1.WatchResponse
	gets    int
	lists   int
	watches []string // the resourceVersion each watch started from
	changed chan struct{}
}

func newOwner(cms ...*corev1.ConfigMap) *owner {
	o := &owner{stored: map[string]*corev1.ConfigMap{}, events: make(chan *resourcev1.WatchResponse, 10), changed: make(chan struct{})}
	for _, cm := range cms {
		o.stored[cm.Namespace+"/"+cm.Name] = cm
	}
	return o
}

func body(t *testing.T, obj any) *resourcev1.Body {
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	return &resourcev1.Body{ContentType: "application/json", Data: data}
}

func (o *owner) List(context.Context, *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lists++
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for _, cm := range o.stored {
		list.Items = append(list.Items, *cm)
	}
	data, _ := json.Marshal(list)
	return &resourcev1.ListResponse{Body: &resourcev1.Body{Data: data}}, nil
}

func (o *owner) Watch(ctx context.Context, req *resourcev1.WatchRequest) (grpc.ServerStreamingClient[resourcev1.WatchResponse], error) {
	o.mu.Lock()
	o.watches = append(o.watches, req.GetOptions().GetResourceVersion())
	o.mu.Unlock()
	return &stream{ctx: ctx, events: o.events}, nil
}

func (o *owner) Changed() <-chan struct{} { return o.changed }

func (o *owner) Get(_ context.Context, req *resourcev1.GetRequest) (*resourcev1.GetResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gets++
	cm, ok := o.stored[req.GetRef().GetNamespace()+"/"+req.GetRef().GetName()]
	if !ok {
		return nil, rpcstatus.FromKube(&apierrors.NewNotFound(corev1.Resource("configmaps"), req.GetRef().GetName()).ErrStatus)
	}
	data, _ := json.Marshal(cm)
	return &resourcev1.GetResponse{Body: &resourcev1.Body{Data: data}}, nil
}

type stream struct {
	grpc.ServerStreamingClient[resourcev1.WatchResponse]
	ctx    context.Context
	events chan *resourcev1.WatchResponse
}

func (s *stream) Recv() (*resourcev1.WatchResponse, error) {
	select {
	case ev := <-s.events:
		if ev == nil { // the owner went away
			return nil, status.Error(codes.Unavailable, "connection refused")
		}
		return ev, nil
	case <-s.ctx.Done():
		return nil, io.EOF
	}
}

func configMap(namespace, name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv}}
}

var configMaps = &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "configmaps", Kind: "ConfigMap", Namespaced: true,
	New: func() runtime.Object { return &corev1.ConfigMap{} }}

func names(objs []runtime.Object) []string {
	out := []string{}
	for _, o := range objs {
		cm := o.(*corev1.ConfigMap)
		out = append(out, cm.Namespace+"/"+cm.Name)
	}
	return out
}

// The copy is listed, then follows the watch; reads come from it (in the owner's order, as
// the caller's objects), a miss is read from the owner, and watchers hear of each change
// once it is applied.
func TestSourceKeepsACopy(t *testing.T) {
	o := newOwner(configMap("b", "x", "3"), configMap("a", "y", "4"), configMap("a", "x", "5"))
	src := New(o, slog.New(slog.DiscardHandler), configMaps)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go src.Run(ctx)
	require.NoError(t, src.WaitSynced(ctx))
	r, ok := src.Lookup(corev1.SchemeGroupVersion.WithResource("configmaps"))
	require.True(t, ok)
	_, ok = src.Lookup(corev1.SchemeGroupVersion.WithResource("secrets"))
	require.False(t, ok)

	all, err := src.List(ctx, r, "", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/x", "a/y", "b/x"}, names(all))
	inA, err := src.ListCached(ctx, r, "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/x", "a/y"}, names(inA))
	named, err := src.List(ctx, r, "", "metadata.name=x")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/x", "b/x"}, names(named))
	_, err = src.List(ctx, r, "", "spec.x=y")
	assert.Error(t, err, "only metadata fields select here")
	all[0].(*corev1.ConfigMap).Labels = map[string]string{"changed": "by the caller"}
	again, _ := src.List(ctx, r, "a", "")
	assert.Empty(t, again[0].(*corev1.ConfigMap).Labels, "a list is the caller's to change")

	obj, err := src.Get(ctx, r, "a", "x")
	require.NoError(t, err)
	assert.Equal(t, "5", obj.(*corev1.ConfigMap).ResourceVersion)
	assert.Zero(t, o.gets, "a get the copy answers costs the owner nothing")

	// An object the copy has not seen yet is read from the owner; one nobody has is NotFound.
	o.mu.Lock()
	o.stored["c/new"] = configMap("c", "new", "11")
	o.mu.Unlock()
	obj, err = src.Get(ctx, r, "c", "new")
	require.NoError(t, err)
	assert.Equal(t, "11", obj.(*corev1.ConfigMap).ResourceVersion)
	_, err = src.Get(ctx, r, "c", "none")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Equal(t, 2, o.gets)

	changes := src.Watch(ctx, r)
	o.events <- &resourcev1.WatchResponse{Type: "ADDED", Object: body(t, configMap("c", "new", "11"))}
	select {
	case ch := <-changes:
		assert.False(t, ch.Deleted)
	case <-time.After(5 * time.Second):
		t.Fatal("no change reported")
	}
	obj, err = src.Get(ctx, r, "c", "new")
	require.NoError(t, err)
	assert.Equal(t, 2, o.gets, "the copy has it now")

	deleting := configMap("a", "y", "12")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	o.events <- &resourcev1.WatchResponse{Type: "MODIFIED", Object: body(t, deleting)}
	assert.Equal(t, registry.Change{Deleting: true}, <-changes)
	o.events <- &resourcev1.WatchResponse{Type: "DELETED", Object: body(t, configMap("b", "x", "13"))}
	assert.Equal(t, registry.Change{Deleted: true}, <-changes)
	all, err = src.List(ctx, r, "", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/x", "a/y", "c/new"}, names(all), "the list reflects every change reported")

	cancel()
	require.Eventually(t, func() bool {
		_, open := <-changes
		return !open
	}, 5*time.Second, time.Millisecond, "a watch ends with its context")
}

// While the owner restarts the copy keeps what it has, and afterwards it resumes its watch
// from the last version it saw, without listing again: nothing the service decides on goes
// missing in between.
func TestSourceSurvivesTheOwnersRestart(t *testing.T) {
	o := newOwner(configMap("a", "x", "5"))
	src := New(o, slog.New(slog.DiscardHandler), configMaps)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go src.Run(ctx)
	require.NoError(t, src.WaitSynced(ctx))
	changes := src.Watch(ctx, configMaps)
	o.events <- &resourcev1.WatchResponse{Type: "ADDED", Object: body(t, configMap("a", "y", "12"))}
	<-changes

	o.events <- nil // the watch fails: the owner is gone
	obj, err := src.Get(ctx, configMaps, "a", "y")
	require.NoError(t, err, "the copy still answers")
	assert.Equal(t, "12", obj.(*corev1.ConfigMap).ResourceVersion)
	assert.Zero(t, o.gets)

	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.watches) == 2
	}, 10*time.Second, 5*time.Millisecond, "the watch is opened again")
	o.mu.Lock()
	assert.Equal(t, []string{"10", "12"}, o.watches, "from the list's version, then from the last version seen")
	assert.Equal(t, 1, o.lists, "no second list")
	o.mu.Unlock()
	o.events <- &resourcev1.WatchResponse{Type: "DELETED", Object: body(t, configMap("a", "x", "13"))}
	assert.Equal(t, registry.Change{Deleted: true}, <-changes)
	all, err := src.List(ctx, configMaps, "", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/y"}, names(all))
}
