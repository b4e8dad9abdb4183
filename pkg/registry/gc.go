package registry

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// RunGarbageCollector deletes objects whose owners are gone (Background propagation),
// orphans the dependents of owners deleted with Orphan, and deletes the dependents of owners
// deleted with Foreground before letting the owner go. A pass runs after deletions and
// every resync; passes are idempotent, so every replica may run it.
func (h *Handler) RunGarbageCollector(ctx context.Context, log *slog.Logger, resync time.Duration) {
	events := h.store.Watch(ctx, "/registry/", 0)
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok || ev.Err != nil {
				events = h.store.Watch(ctx, "/registry/", 0)
				continue
			}
			// Deletions, and owners marked for deletion, are what can make work.
			if ev.Type != storage.Deleted && !bytes.Contains(ev.Value, []byte(`"deletionTimestamp"`)) {
				continue
			}
			coalesce(events)
		case <-tick.C:
		}
		h.collectGarbage(ctx, log)
	}
}

type gcObject struct {
	r   *Resource
	obj runtime.Object
	acc metav1.Object
}

func (o gcObject) ref() *resourcev1.ResourceRef {
	return &resourcev1.ResourceRef{Group: o.r.GroupVersion.Group, Version: o.r.GroupVersion.Version, Resource: o.r.Name,
		Namespace: o.acc.GetNamespace(), Name: o.acc.GetName()}
}

func (h *Handler) collectGarbage(ctx context.Context, log *slog.Logger) {
	var all []gcObject
	byUID := map[types.UID]gcObject{}
	for _, r := range h.set.order {
		if r.Review {
			continue
		}
		res, err := h.list(ctx, r, "", &resourcev1.ListOptions{}, 0, "")
		if err != nil {
			return // try again on the next pass
		}
		for _, obj := range res.items {
			acc, err := meta.Accessor(obj)
			if err != nil {
				continue
			}
			o := gcObject{r: r, obj: obj, acc: acc}
			all = append(all, o)
			byUID[acc.GetUID()] = o
		}
	}
	dependents := map[types.UID][]gcObject{}
	for _, o := range all {
		for _, ref := range o.acc.GetOwnerReferences() {
			dependents[ref.UID] = append(dependents[ref.UID], o)
		}
	}
	for _, o := range all {
		// Background: every owner is gone.
		if refs := o.acc.GetOwnerReferences(); len(refs) > 0 && o.acc.GetDeletionTimestamp() == nil {
			alive := false
			for _, ref := range refs {
				_, exists := byUID[ref.UID]
				alive = alive || exists
			}
			if !alive {
				h.gcDelete(ctx, log, o)
			}
		}
		if o.acc.GetDeletionTimestamp() == nil {
			continue
		}
		finalizers := o.acc.GetFinalizers()
		switch {
		case hasString(finalizers, metav1.FinalizerOrphanDependents):
			for _, d := range dependents[o.acc.GetUID()] {
				h.removeOwnerRef(ctx, log, d, o.acc.GetUID())
			}
			h.removeFinalizer(ctx, log, o, metav1.FinalizerOrphanDependents)
		case hasString(finalizers, metav1.FinalizerDeleteDependents):
			remaining := 0
			for _, d := range dependents[o.acc.GetUID()] {
				remaining++
				if d.acc.GetDeletionTimestamp() == nil {
					h.gcDelete(ctx, log, d)
				}
			}
			if remaining == 0 {
				h.removeFinalizer(ctx, log, o, metav1.FinalizerDeleteDependents)
			}
		}
	}
}

func (h *Handler) gcDelete(ctx context.Context, log *slog.Logger, o gcObject) {
	uid := o.acc.GetUID()
	background := metav1.DeletePropagationBackground
	_, _, err := h.delete(ctx, o.r, o.ref(), &metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}}, false)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		log.Warn("garbage collector: delete", "resource", o.r.Name, "namespace", o.acc.GetNamespace(), "name", o.acc.GetName(), "err", err)
	}
}

func (h *Handler) removeOwnerRef(ctx context.Context, log *slog.Logger, o gcObject, owner types.UID) {
	_, err := h.update(ctx, o.r, o.ref(), false, func(current runtime.Object) (runtime.Object, error) {
		acc, _ := meta.Accessor(current)
		var keep []metav1.OwnerReference
		for _, ref := range acc.GetOwnerReferences() {
			if ref.UID != owner {
				keep = append(keep, ref)
			}
		}
		acc.SetOwnerReferences(keep)
		acc.SetResourceVersion("")
		return current, nil
	})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Warn("garbage collector: orphan", "resource", o.r.Name, "name", o.acc.GetName(), "err", err)
	}
}

func (h *Handler) removeFinalizer(ctx context.Context, log *slog.Logger, o gcObject, finalizer string) {
	_, err := h.update(ctx, o.r, o.ref(), false, func(current runtime.Object) (runtime.Object, error) {
		acc, _ := meta.Accessor(current)
		var keep []string
		for _, f := range acc.GetFinalizers() {
			if f != finalizer {
				keep = append(keep, f)
			}
		}
		acc.SetFinalizers(keep)
		acc.SetResourceVersion("")
		return current, nil
	})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Warn("garbage collector: finalize", "resource", o.r.Name, "name", o.acc.GetName(), "err", err)
	}
}

// coalesce drops the events already queued: one pass handles them all.
func coalesce(events <-chan storage.Event) {
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		default:
			return
		}
	}
}
