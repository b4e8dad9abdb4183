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
	r, err := h.lookup(req.GetRef())
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
	out, err := negotiate(req.GetEncoding().GetAccept(), false)
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
	if replay {
		res, err := h.list(ctx, r, ns, &resourcev1.ListOptions{LabelSelector: req.GetOptions().GetLabelSelector(),
			FieldSelector: req.GetOptions().GetFieldSelector()}, 0, "")
		if err != nil {
			return w.sendError(err)
		}
		for _, obj := range res.items {
			if w.sel.matches(r, obj) {
				if err := w.send("ADDED", obj); err != nil {
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
		return w.sendError(apierrors.NewInternalError(err))
	}
	matches := w.sel.matches(w.r, obj)
	if ev.Type == storage.Deleted {
		if matches {
			return w.send("DELETED", obj)
		}
		return nil
	}
	var oldMatches bool
	if !ev.Created && ev.PrevValue != nil {
		if old, err := w.h.decodeStored(w.r, ev.PrevValue, ev.ModRevision); err == nil {
			oldMatches = w.sel.matches(w.r, old)
		}
	}
	switch {
	case matches && oldMatches:
		return w.send("MODIFIED", obj)
	case matches:
		return w.send("ADDED", obj)
	case oldMatches:
		return w.send("DELETED", obj)
	}
	return nil
}

func (w *watcher) send(typ string, obj runtime.Object) error {
	converted := obj
	if w.out.kind == asTable {
		t, err := w.h.table(w.r, obj, w.first)
		if err != nil {
			return err
		}
		converted = t
	} else if w.out.kind == asPartialMetadata {
		p, err := partialMetadata(obj)
		if err != nil {
			return err
		}
		converted = p
	}
	w.first = false
	data, err := w.h.scheme.encode(converted, w.r.GroupVersion, w.out)
	if err != nil {
		return err
	}
	return w.stream.Send(&resourcev1.WatchResponse{Type: typ, Object: &resourcev1.Body{ContentType: w.out.contentType(), Data: data}})
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
	return w.stream.Send(&resourcev1.WatchResponse{Type: "BOOKMARK", Object: &resourcev1.Body{ContentType: w.out.contentType(), Data: data}})
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
