package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/rpcstatus"
)

const (
	mediaJSON     = "application/json"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// protobufMagic starts kube's protobuf encoding of an object: "k8s" and a zero byte, then a
// runtime.Unknown holding the type and the object.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// protoObject is a kube type with a protobuf encoding (the built-in kinds).
type protoObject interface{ Unmarshal([]byte) error }

// Resource is a client of one resource, whose objects are T and lists L: typed
// (*corev1.ConfigMap, *corev1.ConfigMapList) or *unstructured.Unstructured and
// *unstructured.UnstructuredList for any resource. Objects are sent as JSON; answers come as
// protobuf when T and L have kube's protobuf encoding (the built-in kinds, as client-go asks
// for them), as JSON otherwise.
type Resource[T, L runtime.Object] struct {
	c         *Client
	ref       *resourcev1.ResourceRef // group, version, resource, subresource, namespace
	newObject func() T
	newList   func() L
	accept    *resourcev1.Encoding
}

// For is the client of the resource gvr, whose objects are T and lists L:
//
//	client.For[corev1.ConfigMap, corev1.ConfigMapList](c, corev1.SchemeGroupVersion.WithResource("configmaps"))
//	client.For[unstructured.Unstructured, unstructured.UnstructuredList](c, gvr)
func For[T, L any, PT interface {
	*T
	runtime.Object
}, PL interface {
	*L
	runtime.Object
}](c *Client, gvr schema.GroupVersionResource) *Resource[PT, PL] {
	r := &Resource[PT, PL]{c: c, ref: &resourcev1.ResourceRef{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
		newObject: func() PT { return PT(new(T)) }, newList: func() PL { return PL(new(L)) }, accept: jsonEncoding}
	_, objectPB := any(r.newObject()).(protoObject)
	_, listPB := any(r.newList()).(protoObject)
	if objectPB && listPB {
		r.accept = &resourcev1.Encoding{Accept: mediaProtobuf + ", " + mediaJSON}
	}
	return r
}

// Namespace is the same resource in namespace ns.
func (r *Resource[T, L]) Namespace(ns string) *Resource[T, L] {
	out := *r
	out.ref = &resourcev1.ResourceRef{Group: r.ref.Group, Version: r.ref.Version, Resource: r.ref.Resource, Subresource: r.ref.Subresource, Namespace: ns}
	return &out
}

func (r *Resource[T, L]) named(name string) *resourcev1.ResourceRef {
	return &resourcev1.ResourceRef{Group: r.ref.Group, Version: r.ref.Version, Resource: r.ref.Resource,
		Subresource: r.ref.Subresource, Namespace: r.ref.Namespace, Name: name}
}

var jsonEncoding = &resourcev1.Encoding{Accept: mediaJSON}

// Get reads the object name.
func (r *Resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	resp, err := r.c.resources.Get(ctx, &resourcev1.GetRequest{Ref: r.named(name), Encoding: r.accept, ResourceVersion: opts.ResourceVersion})
	return answer(resp, err, r.newObject())
}

// List reads the collection, one page of opts.Limit objects from opts.Continue when a limit
// is given.
func (r *Resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	resp, err := r.c.resources.List(ctx, &resourcev1.ListRequest{Ref: r.named(""), Encoding: r.accept, Options: listOptions(opts),
		PageSize: opts.Limit, PageToken: opts.Continue})
	return answer(resp, err, r.newList())
}

// Create makes obj (in the resource's namespace).
func (r *Resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	body, err := encode(obj)
	if err != nil {
		return *new(T), err
	}
	resp, err := r.c.resources.Create(ctx, &resourcev1.CreateRequest{Ref: r.named(""), Encoding: r.accept, Body: body,
		Options: writeOptions(opts.DryRun, opts.FieldManager, opts.FieldValidation)})
	return answer(resp, err, r.newObject())
}

// Update replaces the object obj names with obj.
func (r *Resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	name, body, err := encodeNamed(obj)
	if err != nil {
		return *new(T), err
	}
	resp, err := r.c.resources.Update(ctx, &resourcev1.UpdateRequest{Ref: r.named(name), Encoding: r.accept, Body: body,
		Options: writeOptions(opts.DryRun, opts.FieldManager, opts.FieldValidation)})
	return answer(resp, err, r.newObject())
}

// Patch changes the object name with a JSON, merge, strategic-merge or apply patch
// (types.ApplyYAMLPatchType is server-side apply: opts.FieldManager is required, opts.Force
// takes the fields of other managers).
func (r *Resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (T, error) {
	resp, err := r.c.resources.Patch(ctx, &resourcev1.PatchRequest{Ref: r.named(name), Encoding: r.accept,
		Body:    &resourcev1.Body{ContentType: string(pt), Data: data},
		Options: writeOptions(opts.DryRun, opts.FieldManager, opts.FieldValidation), Force: opts.Force != nil && *opts.Force})
	return answer(resp, err, r.newObject())
}

// Apply is server-side apply of obj (which names the object) by manager.
func (r *Resource[T, L]) Apply(ctx context.Context, obj T, manager string, force bool) (T, error) {
	name, body, err := encodeNamed(obj)
	if err != nil {
		return *new(T), err
	}
	return r.Patch(ctx, name, types.ApplyYAMLPatchType, body.GetData(), metav1.PatchOptions{FieldManager: manager, Force: &force})
}

// Delete removes the object name (opts carry preconditions, grace period and propagation).
func (r *Resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	body, err := deleteBody(opts)
	if err != nil {
		return err
	}
	_, err = r.c.resources.Delete(ctx, &resourcev1.DeleteRequest{Ref: r.named(name), Encoding: r.accept, Body: body})
	return asStatusError(err)
}

// DeleteCollection removes the objects sel selects.
func (r *Resource[T, L]) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, sel metav1.ListOptions) error {
	body, err := deleteBody(opts)
	if err != nil {
		return err
	}
	_, err = r.c.resources.DeleteCollection(ctx, &resourcev1.DeleteCollectionRequest{Ref: r.named(""), Encoding: r.accept, Body: body,
		ListOptions: listOptions(sel)})
	return asStatusError(err)
}

// Watch streams the changes of the collection (one object with a metadata.name field
// selector) from opts.ResourceVersion, as kube's watch: it ends when the server ends it, and
// an ERROR event carries a *metav1.Status. ResumingWatch goes on where it ended.
func (r *Resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	ctx, cancel := context.WithCancel(ctx)
	req := &resourcev1.WatchRequest{Ref: r.named(""), Encoding: r.accept, Options: listOptions(opts),
		AllowWatchBookmarks: opts.AllowWatchBookmarks, SendInitialEvents: opts.SendInitialEvents != nil && *opts.SendInitialEvents}
	if opts.TimeoutSeconds != nil {
		req.TimeoutSeconds = *opts.TimeoutSeconds
	}
	stream, err := r.c.resources.Watch(ctx, req)
	if err != nil {
		cancel()
		return nil, asStatusError(err)
	}
	// The first message says the watch is open: errors before it are the call's.
	first, err := stream.Recv()
	if err != nil {
		cancel()
		return nil, asStatusError(err)
	}
	w := &streamWatch{cancel: cancel, events: make(chan watch.Event)}
	go w.run(ctx, stream, first, func() runtime.Object { return r.newObject() })
	return w, nil
}

// streamWatch is a watch.Interface over a Watch stream.
type streamWatch struct {
	cancel context.CancelFunc
	events chan watch.Event
}

func (w *streamWatch) Stop()                          { w.cancel() }
func (w *streamWatch) ResultChan() <-chan watch.Event { return w.events }

func (w *streamWatch) run(ctx context.Context, stream interface {
	Recv() (*resourcev1.WatchResponse, error)
}, first *resourcev1.WatchResponse, newObject func() runtime.Object) {
	defer close(w.events)
	defer w.cancel()
	send := func(ev watch.Event) bool {
		select {
		case w.events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for msg := first; ; {
		if msg.GetType() != "" { // the first message only says the watch is open
			ev, err := decodeEvent(msg, newObject)
			if err != nil {
				ev = watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}
			}
			if !send(ev) {
				return
			}
		}
		var err error
		if msg, err = stream.Recv(); err != nil {
			// The server ended the watch (EOF), or the client stopped it: no event. Otherwise
			// the error is the last event, as kube's ERROR event with its Status.
			if ctx.Err() == nil && !errors.Is(err, io.EOF) {
				send(watch.Event{Type: watch.Error, Object: rpcstatus.ToKube(err)})
			}
			return
		}
	}
}

func decodeEvent(msg *resourcev1.WatchResponse, newObject func() runtime.Object) (watch.Event, error) {
	typ := watch.EventType(msg.GetType())
	var into runtime.Object = &metav1.Status{}
	if typ != watch.Error {
		into = newObject()
	}
	obj, err := decode(msg.GetObject(), into)
	return watch.Event{Type: typ, Object: obj}, err
}

func listOptions(opts metav1.ListOptions) *resourcev1.ListOptions {
	return &resourcev1.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector,
		ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: string(opts.ResourceVersionMatch)}
}

func writeOptions(dryRun []string, manager, validation string) *resourcev1.WriteOptions {
	return &resourcev1.WriteOptions{DryRun: dryRun, FieldManager: manager, FieldValidation: validation}
}

func deleteBody(opts metav1.DeleteOptions) (*resourcev1.Body, error) {
	opts.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}
	data, err := json.Marshal(&opts)
	if err != nil {
		return nil, err
	}
	return &resourcev1.Body{ContentType: mediaJSON, Data: data}, nil
}

// encodeNamed is obj's name and JSON.
func encodeNamed(obj runtime.Object) (string, *resourcev1.Body, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return "", nil, err
	}
	body, err := encode(obj)
	return acc.GetName(), body, err
}

func encode(obj runtime.Object) (*resourcev1.Body, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("apichain client: encoding %T: %w", obj, err)
	}
	return &resourcev1.Body{ContentType: mediaJSON, Data: data}, nil
}

// answer is the object a call answered with, decoded into into, or the call's error as a
// *StatusError.
func answer[R interface{ GetBody() *resourcev1.Body }, T runtime.Object](resp R, err error, into T) (T, error) {
	if err != nil {
		return *new(T), asStatusError(err)
	}
	return decode(resp.GetBody(), into)
}

func decode[T runtime.Object](body *resourcev1.Body, into T) (T, error) {
	switch ct := body.GetContentType(); {
	case strings.HasPrefix(ct, mediaProtobuf):
		return into, decodeProtobuf(body.GetData(), into)
	case ct != "" && !strings.HasPrefix(ct, mediaJSON):
		return into, fmt.Errorf("apichain client: the answer is %s, not JSON or protobuf", ct)
	}
	if err := json.Unmarshal(body.GetData(), into); err != nil {
		return into, fmt.Errorf("apichain client: decoding %T: %w", into, err)
	}
	return into, nil
}

// decodeProtobuf reads kube's protobuf encoding of an object into obj, type included.
func decodeProtobuf(data []byte, obj runtime.Object) error {
	pb, ok := obj.(protoObject)
	if !ok || !bytes.HasPrefix(data, protobufMagic) {
		return fmt.Errorf("apichain client: %T is not kube's protobuf encoding", obj)
	}
	var u runtime.Unknown
	if err := u.Unmarshal(data[len(protobufMagic):]); err != nil {
		return fmt.Errorf("apichain client: decoding %T: %w", obj, err)
	}
	if err := pb.Unmarshal(u.Raw); err != nil {
		return fmt.Errorf("apichain client: decoding %T: %w", obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(u.APIVersion, u.Kind))
	return nil
}

// asStatusError is err as client-go reports a failed request: a *StatusError with the
// server's kube Status (the gRPC status's detail, or one made from its code).
func asStatusError(err error) error {
	if err == nil {
		return nil
	}
	return &apierrors.StatusError{ErrStatus: *rpcstatus.ToKube(err)}
}
