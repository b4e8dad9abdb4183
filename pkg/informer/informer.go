// Package informer keeps a copy of one resource's objects in a process that does not own
// them, fed by a list and a watch through the owner's gRPC API (only the owner reads its
// kinds in etcd): in the gateway, the RBAC authorizer's roles and bindings and the objects
// service-account tokens are bound to; in a backend, the kinds other services own that it
// reads (pkg/registry/remote).
package informer

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
	"google.golang.org/grpc"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reader is what an informer needs of the delegation chain, reached the way every request is
// (routing.Client).
type Reader interface {
	List(ctx context.Context, req *resourcev1.ListRequest) (*resourcev1.ListResponse, error)
	Watch(ctx context.Context, req *resourcev1.WatchRequest) (grpc.ServerStreamingClient[resourcev1.WatchResponse], error)
	// Changed is closed when the routes may have changed (a backend became ready).
	Changed() <-chan struct{}
}

// Decoder reads one object of the resource from JSON.
type Decoder func([]byte) (metav1.Object, error)

// DecoderOf decodes into *T.
func DecoderOf[T any, PT interface {
	*T
	metav1.Object
}]() Decoder {
	return func(data []byte) (metav1.Object, error) {
		obj := PT(new(T))
		return obj, json.Unmarshal(data, obj)
	}
}

// Informer lists a resource, watches it from the list's resourceVersion and keeps the
// objects by namespace/name. A watch that ends resumes from the last resourceVersion seen;
// one that has expired (410) starts over with a list.
type Informer struct {
	ref      *resourcev1.ResourceRef
	decode   Decoder
	reader   Reader
	log      *slog.Logger
	onChange func(Event)

	mu      sync.RWMutex
	objects map[string]metav1.Object
	synced  chan struct{}
	once    sync.Once
}

// Event is a change the copy applied: an ADDED, MODIFIED or DELETED object, or (Type "") a
// fresh list that replaced every object.
type Event struct {
	Type   string
	Object metav1.Object
}

// New follows ref through reader; onChange (may be nil) runs after every change.
func New(reader Reader, ref *resourcev1.ResourceRef, decode Decoder, log *slog.Logger, onChange func(Event)) *Informer {
	if onChange == nil {
		onChange = func(Event) {}
	}
	return &Informer{ref: ref, decode: decode, reader: reader, log: log, onChange: onChange,
		objects: map[string]metav1.Object{}, synced: make(chan struct{})}
}

// Synced is closed after the first list.
func (i *Informer) Synced() <-chan struct{} { return i.synced }

// Get returns the object namespace/name ("" namespace for cluster-scoped kinds).
func (i *Informer) Get(namespace, name string) (metav1.Object, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	o, ok := i.objects[namespace+"/"+name]
	return o, ok
}

// List returns every object, in no particular order.
func (i *Informer) List() []metav1.Object {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]metav1.Object, 0, len(i.objects))
	for _, o := range i.objects {
		out = append(out, o)
	}
	return out
}

// Run keeps the copy current until ctx ends, retrying while core is away: until the first
// list (core is coming up with the gateway, whose readiness may wait on it) soon and as soon
// as the routes change, then with a backoff of up to a second.
func (i *Informer) Run(ctx context.Context) {
	rv := ""
	const soon = 25 * time.Millisecond
	backoff := soon
	for ctx.Err() == nil {
		var wake <-chan struct{} // nil once synced: never
		select {
		case <-i.synced:
		default:
			wake = i.reader.Changed() // before the try, so a change during it counts
		}
		var err error
		if rv == "" {
			rv, err = i.list(ctx)
		}
		if err == nil {
			backoff = soon
			rv, err = i.watch(ctx, rv)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			i.log.Debug("informer: will retry", "resource", i.ref.GetResource(), "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			case <-wake:
			}
			select {
			case <-i.synced:
				backoff = min(2*backoff, time.Second)
			default:
			}
		}
	}
}

var jsonEncoding = &resourcev1.Encoding{Accept: "application/json"}

// list replaces the objects with a fresh list and returns its resourceVersion.
func (i *Informer) list(ctx context.Context) (string, error) {
	resp, err := i.reader.List(ctx, &resourcev1.ListRequest{Ref: i.ref, Encoding: jsonEncoding})
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
	objects := make(map[string]metav1.Object, len(list.Items))
	for _, raw := range list.Items {
		obj, err := i.decode(raw)
		if err != nil {
			return "", err
		}
		objects[obj.GetNamespace()+"/"+obj.GetName()] = obj
	}
	i.mu.Lock()
	i.objects = objects
	i.mu.Unlock()
	i.once.Do(func() { close(i.synced) })
	i.onChange(Event{})
	return list.Metadata.ResourceVersion, nil
}

// errExpired is a watch's 410: the resourceVersion is gone, list again.
var errExpired = errors.New("resource version expired")

// watch applies events from rv until the watch ends; it returns the resourceVersion to resume
// from ("" to list again).
func (i *Informer) watch(ctx context.Context, rv string) (string, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := i.reader.Watch(wctx, &resourcev1.WatchRequest{Ref: i.ref, Encoding: jsonEncoding,
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
		obj, err := i.decode(ev.GetObject().GetData())
		if err != nil {
			return rv, err
		}
		rv = obj.GetResourceVersion()
		if ev.GetType() == "BOOKMARK" {
			continue
		}
		key := obj.GetNamespace() + "/" + obj.GetName()
		i.mu.Lock()
		if ev.GetType() == "DELETED" {
			delete(i.objects, key)
		} else {
			i.objects[key] = obj
		}
		i.mu.Unlock()
		i.onChange(Event{Type: ev.GetType(), Object: obj})
	}
}

// Getter reads one object through the chain.
type Getter interface {
	Get(ctx context.Context, req *resourcev1.GetRequest) (*resourcev1.GetResponse, error)
}

// GetJSON reads the object ref names into out, from JSON; a backend's error comes back as
// kube's Status error (a missing object is a NotFound).
func GetJSON(ctx context.Context, g Getter, ref *resourcev1.ResourceRef, out any) error {
	resp, err := g.Get(ctx, &resourcev1.GetRequest{Ref: ref, Encoding: &resourcev1.Encoding{Accept: "application/json"}})
	if err != nil {
		return &apierrors.StatusError{ErrStatus: *rpcstatus.ToKube(err)}
	}
	if err := json.Unmarshal(resp.GetBody().GetData(), out); err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}
