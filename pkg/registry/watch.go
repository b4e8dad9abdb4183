package registry

import (
	"context"
	"fmt"
	"strconv"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/storage"
	"google.golang.org/grpc"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// bookmarkInterval is how often a quiet watch that allows bookmarks gets one.
var bookmarkInterval = 30 * time.Second

// Watch streams changes. resourceVersion "" or "0" first replays the current objects as
// ADDED (kube's semantics); a specific version streams what happened after it, or ends with
// a 410 Gone ERROR event when etcd compacted it. sendInitialEvents=true replays and then
// sends a BOOKMARK annotated k8s.io/initial-events-end.
func (h *Handler) Watch(req *resourcev1.WatchRequest, stream grpc.ServerStreamingServer[resourcev1.WatchResponse]) error {
	r, err := h.lookup(stream.Context(), req.GetRef(), "watch")
	if err != nil {
		return toGRPC(err)
	}
	sel, err := parseSelector(r, req.GetOptions())
	if err != nil {
		return toGRPC(err)
	}
	rv, err := parseRV(req.GetOptions().GetResourceVersion())
	if err != nil {
		return toGRPC(err)
	}
	out, err := negotiate(req.GetEncoding().GetAccept(), false, noProtobuf(r.New()))
	if err != nil {
		return toGRPC(err)
	}
	ctx := stream.Context()
	if t := req.GetTimeoutSeconds(); t > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	ns := req.GetRef().GetNamespace()
	if name := req.GetRef().GetName(); name != "" {
		// A watch on one object is a watch with a metadata.name field selector.
		sel.fields = fields.AndSelectors(sel.fields, fields.OneTermEqualSelector("metadata.name", name))
	}
	w := &watcher{h: h, r: r, sel: sel, out: out, stream: stream, first: true}
	// Established: the empty type says so, and the content type tells the gateway how to frame.
	if err := stream.Send(&resourcev1.WatchResponse{Object: &resourcev1.Body{ContentType: out.contentType()}}); err != nil {
		return err
	}

	replay := req.GetSendInitialEvents() || rv == 0
	if c := h.cache(r); c != nil {
		if served, err := w.fromCache(ctx, c, ns, req, rv, replay); served {
			return err
		}
	}
	if replay {
		res, err := h.list(ctx, r, ns, &resourcev1.ListOptions{LabelSelector: req.GetOptions().GetLabelSelector(),
			FieldSelector: req.GetOptions().GetFieldSelector()}, 0, "")
		if err != nil {
			return w.sendError(err)
		}
		for _, obj := range res.items {
			if w.sel.matches(r, obj) {
				// The items may be the cache's: send encodes copies of them.
				if err := w.send("ADDED", obj, &encodings{}); err != nil {
					return err
				}
			}
		}
		rv = res.revision
		if req.GetSendInitialEvents() && req.GetAllowWatchBookmarks() {
			if err := w.bookmark(rv, true); err != nil {
				return err
			}
		}
	}
	events := h.store.Watch(ctx, prefix(r, ns), rv)
	ticker := time.NewTicker(bookmarkInterval)
	defer ticker.Stop()
	last := rv
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-h.stopping:
			return nil
		case <-ticker.C:
			if req.GetAllowWatchBookmarks() {
				if err := w.bookmark(last, false); err != nil {
					return err
				}
			}
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if ev.Err != nil {
				if ev.Err == storage.ErrCompacted {
					return w.sendError(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", rv)))
				}
				return w.sendError(apierrors.NewInternalError(ev.Err))
			}
			last = ev.ModRevision
			if ev.Type == storage.Progress {
				continue
			}
			if err := w.event(ev); err != nil {
				return err
			}
		}
	}
}

type watcher struct {
	h      *Handler
	r      *Resource
	sel    selector
	out    output
	stream grpc.ServerStreamingServer[resourcev1.WatchResponse]
	first  bool
}

// event turns a storage change into the kube event a selector-filtered watcher sees: an
// object that stops matching is DELETED for it, one that starts matching is ADDED.
func (w *watcher) event(ev storage.Event) error {
	obj, err := w.h.decodeStored(w.r, ev.Value, ev.ModRevision)
	if err != nil {
		return w.sendError(storeError(err, w.r.GroupResource(), ""))
	}
	var prev runtime.Object
	if !ev.Created && ev.PrevValue != nil {
		prev, _ = w.h.decodeStored(w.r, ev.PrevValue, ev.ModRevision)
	}
	return w.change(ev.Type, obj, prev, ev.Created, nil)
}

// change sends what a selector-filtered watcher sees of a change: an object that stops
// matching is DELETED for it, one that starts matching is ADDED. With enc, obj is the watch
// cache's, shared: it is read, and encoded once for every watcher (enc keeps the encodings).
func (w *watcher) change(typ storage.EventType, obj, prev runtime.Object, created bool, enc *encodings) error {
	matches := w.sel.matches(w.r, obj)
	if typ == storage.Deleted {
		if matches {
			return w.send("DELETED", obj, enc)
		}
		return nil
	}
	// A change to an existing object whose previous value is unknown (the watch started right
	// at a compaction) is taken as a change within the selection: MODIFIED, not ADDED, for an
	// object the client already has.
	oldMatches := !created && matches
	if !created && prev != nil {
		oldMatches = w.sel.matches(w.r, prev)
	}
	switch {
	case matches && oldMatches:
		return w.send("MODIFIED", obj, enc)
	case matches:
		return w.send("ADDED", obj, enc)
	case oldMatches:
		return w.send("DELETED", obj, enc)
	}
	return nil
}

// send sends obj as an event of type typ. With enc, obj is the watch cache's: a plain
// object's encoding is shared with the event's other watchers; a Table or metadata is made
// from a copy.
func (w *watcher) send(typ string, obj runtime.Object, enc *encodings) error {
	var data []byte
	var err error
	if plain := w.out.kind != asTable && w.out.kind != asPartialMetadata; enc != nil && plain {
		data, err = enc.get(w.out, func() ([]byte, error) { return w.h.scheme.encode(obj.DeepCopyObject(), w.r.GroupVersion, w.out) })
	} else {
		if enc != nil {
			obj = obj.DeepCopyObject()
		}
		data, err = w.encode(obj)
	}
	if err != nil {
		return err
	}
	return w.stream.Send(&resourcev1.WatchResponse{Type: typ, Object: &resourcev1.Body{ContentType: w.out.contentType(), Data: data},
		Revision: revisionOf(obj)})
}

// revisionOf is obj's resourceVersion as a number (0 if it has none).
func revisionOf(obj runtime.Object) int64 {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	rev, _ := strconv.ParseInt(acc.GetResourceVersion(), 10, 64)
	return rev
}

// encode encodes an object of the watcher's own in its output: as is, as a Table row (the
// first with the column definitions) or as metadata.
func (w *watcher) encode(obj runtime.Object) ([]byte, error) {
	converted := obj
	if w.out.kind == asTable {
		t, err := w.h.table(w.r, obj, w.first)
		if err != nil {
			return nil, err
		}
		converted = t
	} else if w.out.kind == asPartialMetadata {
		p, err := partialMetadata(obj)
		if err != nil {
			return nil, err
		}
		converted = p
	}
	w.first = false
	return w.h.scheme.encode(converted, w.r.GroupVersion, w.out)
}

// bookmark sends a BOOKMARK: an empty object of the kind carrying only a resourceVersion.
func (w *watcher) bookmark(rev int64, initialEventsEnd bool) error {
	obj := w.r.New()
	obj.GetObjectKind().SetGroupVersionKind(w.r.GroupVersion.WithKind(w.r.Kind))
	acc, _ := meta.Accessor(obj)
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEventsEnd {
		acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	data, err := w.h.scheme.encode(obj, w.r.GroupVersion, output{mediaType: w.out.mediaType})
	if err != nil {
		return err
	}
	return w.stream.Send(&resourcev1.WatchResponse{Type: "BOOKMARK", Object: &resourcev1.Body{ContentType: w.out.contentType(), Data: data}, Revision: rev})
}

// sendError ends the watch with an ERROR event carrying the Status, as kube does.
func (w *watcher) sendError(err error) error {
	se, ok := err.(apierrors.APIStatus)
	if !ok {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	data, encErr := w.h.scheme.encode(&st, schema.GroupVersion{Version: "v1"}, output{mediaType: w.out.mediaType})
	if encErr != nil {
		return encErr
	}
	return w.stream.Send(&resourcev1.WatchResponse{Type: "ERROR", Object: &resourcev1.Body{ContentType: w.out.contentType(), Data: data}})
}

// fromCache serves the watch from the resource's watch cache. served=false means the cache
// cannot (not ready, or the version is older than its window) and etcd must.
func (w *watcher) fromCache(ctx context.Context, c *watchCache, ns string, req *resourcev1.WatchRequest, rv int64, replay bool) (served bool, err error) {
	if replay && req.GetOptions().GetResourceVersion() == "" {
		// "Most recent": the replay must include every write acknowledged before the watch.
		current, err := w.h.store.CurrentRevision(ctx)
		if err != nil || c.waitFresh(ctx, uint64(current), consistentReadTimeout) != nil {
			return false, nil
		}
	}
	initial, cw, rev, err := c.watch(prefix(w.r, ns), rv, replay)
	if err != nil {
		return false, nil
	}
	defer c.stop(cw)
	// Cached objects are shared: change reads them, and encodes copies.
	for _, e := range initial {
		if err := w.change(e.typ, e.obj, e.prev, e.created, orOwn(e.encoded)); err != nil {
			return true, err
		}
	}
	last := rev
	if replay && req.GetSendInitialEvents() && req.GetAllowWatchBookmarks() {
		if err := w.bookmark(last, true); err != nil {
			return true, err
		}
	}
	ticker := time.NewTicker(bookmarkInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case <-w.h.stopping:
			return true, nil
		case <-ticker.C:
			if req.GetAllowWatchBookmarks() {
				if err := w.bookmark(last, false); err != nil {
					return true, err
				}
			}
		case e, ok := <-cw.ch:
			if !ok {
				return true, nil // the cache restarted or this watcher lagged: the client re-watches
			}
			last = e.rev
			if err := w.change(e.typ, e.obj, e.prev, e.created, orOwn(e.encoded)); err != nil {
				return true, err
			}
		}
	}
}

// orOwn is enc, or encodings of the caller's own for an event without any (a replayed
// object): the object is the cache's either way.
func orOwn(enc *encodings) *encodings {
	if enc == nil {
		return &encodings{}
	}
	return enc
}
