package authz

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeCore serves lists and watches of the RBAC resources from memory.
type fakeCore struct {
	mu      sync.Mutex
	lists   map[string][]any // resource -> items
	watches map[string]chan *resourcev1.WatchResponse
	listed  map[string]int
	gone    map[string]bool // the next watch of the resource answers 410
}

func newFakeCore() *fakeCore {
	f := &fakeCore{lists: map[string][]any{}, watches: map[string]chan *resourcev1.WatchResponse{},
		listed: map[string]int{}, gone: map[string]bool{}}
	for _, k := range rbacKinds {
		f.watches[k.resource] = make(chan *resourcev1.WatchResponse, 10)
	}
	return f
}

func (f *fakeCore) List(_ context.Context, req *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := req.GetRef().GetResource()
	f.listed[r]++
	data, _ := json.Marshal(map[string]any{"metadata": map[string]string{"resourceVersion": "10"}, "items": f.lists[r]})
	return &resourcev1.ListResponse{Body: &resourcev1.Body{ContentType: "application/json", Data: data}}, nil
}

type fakeStream struct {
	grpc.ClientStream
	ctx    context.Context
	events chan *resourcev1.WatchResponse
}

func (s *fakeStream) Recv() (*resourcev1.WatchResponse, error) {
	select {
	case ev := <-s.events:
		return ev, nil
	case <-s.ctx.Done():
		return nil, io.EOF
	}
}

func (f *fakeCore) Changed() <-chan struct{} { return nil }

func (f *fakeCore) Watch(ctx context.Context, req *resourcev1.WatchRequest) (grpc.ServerStreamingClient[resourcev1.WatchResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := req.GetRef().GetResource()
	if f.gone[r] {
		f.gone[r] = false
		return nil, rpcstatus.FromKube(rpcstatus.NewStatus(410, metav1.StatusReasonExpired, "too old resource version"))
	}
	return &fakeStream{ctx: ctx, events: f.watches[r]}, nil
}

func (f *fakeCore) send(resource, typ string, obj any) {
	data, _ := json.Marshal(obj)
	f.watches[resource] <- &resourcev1.WatchResponse{Type: typ, Object: &resourcev1.Body{ContentType: "application/json", Data: data}}
}

func TestSyncFollowsTheCluster(t *testing.T) {
	core := newFakeCore()
	core.lists["clusterroles"] = []any{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view", ResourceVersion: "5"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}}
	rbac := &RBAC{}
	s := NewSync(rbac, core, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	select {
	case <-s.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced after every list")
	}
	bob := &user.User{Name: "bob"}
	get := resourceReq("get", "", "pods", "", "team", "p")
	allowed := func() bool { ok, _ := rbac.Authorize(bob, get); return ok }
	assert.False(t, allowed())

	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bob", ResourceVersion: "11"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}}
	core.send("rolebindings", "", nil) // the established message
	core.send("rolebindings", "ADDED", binding)
	require.Eventually(t, allowed, 10*time.Second, time.Millisecond, "a new binding applies")

	core.send("rolebindings", "BOOKMARK", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12"}})
	core.send("rolebindings", "DELETED", binding)
	require.Eventually(t, func() bool { return !allowed() }, 10*time.Second, time.Millisecond, "a deleted binding stops applying")

	// An expired watch starts over with a list, which brings the binding back.
	core.mu.Lock()
	core.lists["rolebindings"] = []any{binding}
	core.gone["rolebindings"] = true
	core.mu.Unlock()
	core.send("rolebindings", "ERROR", rpcstatus.NewStatus(410, metav1.StatusReasonExpired, "too old resource version"))
	require.Eventually(t, allowed, 10*time.Second, time.Millisecond, "relisted after 410")
	core.mu.Lock()
	assert.GreaterOrEqual(t, core.listed["rolebindings"], 2)
	core.mu.Unlock()
}
