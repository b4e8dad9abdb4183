// Package garbagecollector is apichain's garbage collector, after kube's controller of the
// same name (k8s.io/kubernetes/pkg/controller/garbagecollector): it deletes objects whose
// owners are all gone (Background propagation), orphans the dependents of owners deleted
// with Orphan, and deletes the dependents of owners deleted with Foreground before letting
// the owner go. It works through a registry.Client, as kube's works through the API.
package garbagecollector

import (
	"context"
	"github.com/apichain/apichain/pkg/controller"
	"log/slog"
	"slices"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Run collects garbage until ctx is done: a pass runs after deletions (and marks for
// deletion) and every resync, not at start, where it would list every object while the
// server starts. Passes are idempotent, so every replica may run one.
func Run(ctx context.Context, c *registry.Client, log *slog.Logger, resync time.Duration) {
	deletions := controller.Filter(ctx, c.Watch(ctx, nil), func(ch registry.Change) bool { return ch.Deleted || ch.Deleting })
	started := false
	controller.Loop(ctx, resync, func(ctx context.Context) error {
		if started {
			collect(ctx, c, log)
		}
		started = true
		return nil
	}, deletions)
}

type object struct {
	r   *registry.Resource
	acc metav1.Object
}

// collect is one pass over every stored object. It only reads them (its writes read the
// object afresh), so it reads the watch cache's own, without copying each.
func collect(ctx context.Context, c *registry.Client, log *slog.Logger) {
	var all []object
	byUID := map[types.UID]object{}
	for _, r := range c.Resources() {
		items, err := c.ListShared(ctx, r, "", "")
		if err != nil {
			return // try again on the next pass
		}
		for _, obj := range items {
			acc, err := meta.Accessor(obj)
			if err != nil {
				continue
			}
			o := object{r: r, acc: acc}
			all = append(all, o)
			byUID[acc.GetUID()] = o
		}
	}
	dependents := map[types.UID][]object{}
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
				deleteObject(ctx, c, log, o)
			}
		}
		if o.acc.GetDeletionTimestamp() == nil {
			continue
		}
		finalizers := o.acc.GetFinalizers()
		switch {
		case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
			for _, d := range dependents[o.acc.GetUID()] {
				removeOwnerRef(ctx, c, log, d, o.acc.GetUID())
			}
			removeFinalizer(ctx, c, log, o, metav1.FinalizerOrphanDependents)
		case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
			remaining := 0
			for _, d := range dependents[o.acc.GetUID()] {
				remaining++
				if d.acc.GetDeletionTimestamp() == nil {
					deleteObject(ctx, c, log, d)
				}
			}
			if remaining == 0 {
				removeFinalizer(ctx, c, log, o, metav1.FinalizerDeleteDependents)
			}
		}
	}
}

// deleteObject deletes o, if it is still the object seen (same UID), in the background.
func deleteObject(ctx context.Context, c *registry.Client, log *slog.Logger, o object) {
	uid := o.acc.GetUID()
	background := metav1.DeletePropagationBackground
	_, err := c.Delete(ctx, o.r, o.acc.GetNamespace(), o.acc.GetName(),
		&metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		log.Warn("garbage collector: delete", "resource", o.r.Name, "namespace", o.acc.GetNamespace(), "name", o.acc.GetName(), "err", err)
	}
}

// removeOwnerRef orphans o: it no longer names owner.
func removeOwnerRef(ctx context.Context, c *registry.Client, log *slog.Logger, o object, owner types.UID) {
	err := c.Update(ctx, o.r, o.acc.GetNamespace(), o.acc.GetName(), "", func(current runtime.Object) {
		acc, _ := meta.Accessor(current)
		var keep []metav1.OwnerReference
		for _, ref := range acc.GetOwnerReferences() {
			if ref.UID != owner {
				keep = append(keep, ref)
			}
		}
		acc.SetOwnerReferences(keep)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Warn("garbage collector: orphan", "resource", o.r.Name, "name", o.acc.GetName(), "err", err)
	}
}

// removeFinalizer lets o go once its dependents are dealt with.
func removeFinalizer(ctx context.Context, c *registry.Client, log *slog.Logger, o object, finalizer string) {
	err := c.Update(ctx, o.r, o.acc.GetNamespace(), o.acc.GetName(), "", func(current runtime.Object) {
		acc, _ := meta.Accessor(current)
		var keep []string
		for _, f := range acc.GetFinalizers() {
			if f != finalizer {
				keep = append(keep, f)
			}
		}
		acc.SetFinalizers(keep)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Warn("garbage collector: finalize", "resource", o.r.Name, "name", o.acc.GetName(), "err", err)
	}
}
