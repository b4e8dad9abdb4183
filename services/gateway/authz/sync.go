package authz

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rbac"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/grpc"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reader is what Sync needs of the delegation chain: core's ResourceService, reached the
// way every request is (the gateway never reads etcd).
type Reader interface {
	List(ctx context.Context, req *resourcev1.ListRequest) (*resourcev1.ListResponse, error)
	Watch(ctx context.Context, req *resourcev1.WatchRequest) (grpc.ServerStreamingClient[resourcev1.WatchResponse], error)
}

// rbacKind is one of the four RBAC resources and how to read its objects.
type rbacKind struct {
	resource string
	decode   func([]byte) (metav1.Object, error)
}

func decoder[T any, PT interface {
	*T
	metav1.Object
}]() func([]byte) (metav1.Object, error) {
	return func(data []byte) (metav1.Object, error) {
		obj := PT(new(T))
		return obj, json.Unmarshal(data, obj)
	}
}

var rbacKinds = []rbacKind{
	{"clusterroles", decoder[rbacv1.ClusterRole]()},
	{"roles", decoder[rbacv1.Role]()},
	{"clusterrolebindings", decoder[rbacv1.ClusterRoleBinding]()},
	{"rolebindings", decoder[rbacv1.RoleBinding]()},
}

// Sync keeps an RBAC authorizer's policy in step with the cluster's RBAC objects: it lists
// each of the four resources, watches from the list's resourceVersion, and rebuilds the
// policy after every change, so a new binding takes effect at once on every gateway. A watch
// that ends resumes from the last resourceVersion seen; one that has expired (410) starts
// over with a list.
type Sync struct {
	rbac   *RBAC
	reader Reader
	log    *slog.Logger

	mu      sync.Mutex
	objects []map[string]metav1.Object // per rbacKinds entry, by namespace/name
	listed  []bool
	changed chan struct{}
	synced  chan struct{}
	once    sync.Once
}

// NewSync feeds rbac from reader.
func NewSync(rbac *RBAC, reader Reader, log *slog.Logger) *Sync {
	s := &Sync{rbac: rbac, reader: reader, log: log, changed: make(chan struct{}, 1), synced: make(chan struct{}),
		listed: make([]bool, len(rbacKinds))}
	for range rbacKinds {
		s.objects = append(s.objects, map[string]metav1.Object{})
	}
	return s
}

// Synced is closed once the first complete policy is in use.
func (s *Sync) Synced() <-chan struct{} { return s.synced }

// Run keeps the policy current until ctx ends.
func (s *Sync) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range rbacKinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.follow(ctx, i)
		}()
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-s.changed:
			s.rebuild()
		}
	}
}

// follow lists and watches one resource until ctx ends, retrying while core is away.
func (s *Sync) follow(ctx context.Context, kind int) {
	rv := ""
	// Until the first sync core is coming up with the gateway, whose readiness waits on this:
	// retry soon. Afterwards back off to a second.
	const soon = 25 * time.Millisecond
	backoff := soon
	for ctx.Err() == nil {
		var err error
		if rv == "" {
			rv, err = s.list(ctx, kind)
		}
		if err == nil {
			backoff = soon
			rv, err = s.watch(ctx, kind, rv)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Debug("RBAC cache: will retry", "resource", rbacKinds[kind].resource, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			select {
			case <-s.synced:
				backoff = min(2*backoff, time.Second)
			default:
			}
		}
	}
}

func ref(kind int) *resourcev1.ResourceRef {
	return &resourcev1.ResourceRef{Group: rbacv1.GroupName, Version: "v1", Resource: rbacKinds[kind].resource}
}

var jsonEncoding = &resourcev1.Encoding{Accept: "application/json"}

// list replaces the resource's objects with a fresh list and returns its resourceVersion.
func (s *Sync) list(ctx context.Context, kind int) (string, error) {
	resp, err := s.reader.List(ctx, &resourcev1.ListRequest{Ref: ref(kind), Encoding: jsonEncoding})
	if err != nil {
		return "", err
	}
	var list struct {
		Metadata metav1.ListMeta   `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(resp.GetBody().GetData(), &list); err != nil {
		return "", err
	}
	objects := map[string]metav1.Object{}
	for _, raw := range list.Items {
		obj, err := rbacKinds[kind].decode(raw)
		if err != nil {
			return "", err
		}
		objects[obj.GetNamespace()+"/"+obj.GetName()] = obj
	}
	s.mu.Lock()
	s.objects[kind], s.listed[kind] = objects, true
	s.mu.Unlock()
	s.notify()
	return list.Metadata.ResourceVersion, nil
}

// errExpired is a watch's 410: the resourceVersion is gone, list again.
var errExpired = errors.New("resource version expired")

// watch applies events from rv until the watch ends; it returns the resourceVersion to resume
// from ("" to list again).
func (s *Sync) watch(ctx context.Context, kind int, rv string) (string, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.reader.Watch(wctx, &resourcev1.WatchRequest{Ref: ref(kind), Encoding: jsonEncoding,
		Options: &resourcev1.ListOptions{ResourceVersion: rv}, AllowWatchBookmarks: true})
	if err != nil {
		if rpcstatus.ToKube(err).Code == http.StatusGone {
			return "", errExpired
		}
		return rv, err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return rv, err
		}
		switch ev.GetType() {
		case "": // the watch is established
			continue
		case "ERROR":
			st := &metav1.Status{}
			if json.Unmarshal(ev.GetObject().GetData(), st) == nil && st.Code == http.StatusGone {
				return "", errExpired
			}
			return rv, errors.New("watch error: " + st.Message)
		}
		obj, err := rbacKinds[kind].decode(ev.GetObject().GetData())
		if err != nil {
			return rv, err
		}
		rv = obj.GetResourceVersion()
		if ev.GetType() == "BOOKMARK" {
			continue
		}
		key := obj.GetNamespace() + "/" + obj.GetName()
		s.mu.Lock()
		if ev.GetType() == "DELETED" {
			delete(s.objects[kind], key)
		} else {
			s.objects[kind][key] = obj
		}
		s.mu.Unlock()
		s.notify()
	}
}

func (s *Sync) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// rebuild makes a new policy from the objects, once every resource has been listed.
func (s *Sync) rebuild() {
	s.mu.Lock()
	for _, ok := range s.listed {
		if !ok {
			s.mu.Unlock()
			return
		}
	}
	var all []metav1.Object
	for _, objects := range s.objects {
		for _, o := range objects {
			all = append(all, o)
		}
	}
	s.mu.Unlock()
	s.rbac.Set(rbac.PolicyOf(all))
	s.once.Do(func() { close(s.synced) })
}
