package registry

import (
	"context"
	"log/slog"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// SystemNamespaces are the namespaces kube-apiserver creates at start.
var SystemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// EnsureNamespaces creates the given namespaces if they are missing.
func (h *Handler) EnsureNamespaces(ctx context.Context, names []string) error {
	r, ok := h.set.Lookup(namespacesGVR)
	if !ok {
		return nil
	}
	for _, name := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := h.create(ctx, r, "", ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// RunNamespaceFinalizer is the namespace lifecycle: a namespace being deleted has its
// content deleted, then its "kubernetes" finalizer removed, and then it goes away. It runs
// until ctx is done; every core replica may run it (the steps are idempotent).
func (h *Handler) RunNamespaceFinalizer(ctx context.Context, log *slog.Logger) {
	r, ok := h.set.Lookup(namespacesGVR)
	if !ok {
		return
	}
	events := h.store.Watch(ctx, prefix(r, ""), 0)
	resync := time.NewTicker(time.Second)
	defer resync.Stop()
	for {
		h.finalizeTerminating(ctx, r, log)
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok || ev.Err != nil {
				events = h.store.Watch(ctx, prefix(r, ""), 0)
			}
			if ev.Type == storage.Progress {
				continue
			}
		case <-resync.C:
		}
	}
}

func (h *Handler) finalizeTerminating(ctx context.Context, r *Resource, log *slog.Logger) {
	res, err := h.list(ctx, r, "", &resourcev1.ListOptions{FieldSelector: "status.phase=Terminating"}, 0, "")
	if err != nil {
		return
	}
	for _, obj := range res.items {
		ns := obj.(*corev1.Namespace)
		if ns.DeletionTimestamp == nil {
			continue
		}
		if remaining := h.deleteContent(ctx, ns.Name); remaining > 0 {
			continue
		}
		ref := &resourcev1.ResourceRef{Version: "v1", Resource: "namespaces", Subresource: "finalize", Name: ns.Name}
		_, err := h.update(ctx, r, ref, false, func(current runtime.Object) (runtime.Object, error) {
			c := current.(*corev1.Namespace)
			var keep []corev1.FinalizerName
			for _, f := range c.Spec.Finalizers {
				if f != corev1.FinalizerKubernetes {
					keep = append(keep, f)
				}
			}
			c.Spec.Finalizers = keep
			c.ResourceVersion = ""
			return c, nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			log.Warn("finalizing namespace", "namespace", ns.Name, "err", err)
		}
	}
}

// deleteContent deletes every object in namespace and returns how many remain (waiting on
// their own finalizers).
func (h *Handler) deleteContent(ctx context.Context, namespace string) int {
	remaining := 0
	for _, r := range h.set.order {
		if !r.Namespaced {
			continue
		}
		res, err := h.list(ctx, r, namespace, &resourcev1.ListOptions{}, 0, "")
		if err != nil {
			remaining++
			continue
		}
		for _, obj := range res.items {
			ref := &resourcev1.ResourceRef{Group: r.GroupVersion.Group, Version: r.GroupVersion.Version, Resource: r.Name,
				Namespace: namespace, Name: nameOf(obj)}
			if _, deleted, err := h.delete(ctx, r, ref, nil, false); err != nil || !deleted {
				if !apierrors.IsNotFound(err) {
					remaining++
				}
			}
		}
	}
	return remaining
}

func nameOf(obj runtime.Object) string {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetName()
	}
	return ""
}

// Namespaces is kube's namespaces resource: spec.finalizers ["kubernetes"] and phase Active on
// create, Terminating while deleting (the namespace finalizer then deletes the content).
func Namespaces() *Resource {
	return &Resource{GroupVersion: corev1.SchemeGroupVersion, Name: "namespaces", SingularName: "namespace",
		Kind: "Namespace", ShortNames: []string{"ns"}, Subresources: []string{"finalize", "status"},
		New: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
		PrepareForCreate: func(o runtime.Object) {
			ns := o.(*corev1.Namespace)
			ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
			ns.Status.Phase = corev1.NamespaceActive
		},
		PendingDeletion: func(o runtime.Object) bool { return len(o.(*corev1.Namespace).Spec.Finalizers) > 0 },
		OnDeletionStart: func(o runtime.Object) { o.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating },
		FieldLabels: func(o runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
		},
		Columns: []metav1.TableColumnDefinition{metav1.TableColumnDefinition{Name: "Status", Type: "string", Description: "The status of the namespace"}, AgeColumn},
		Cells: func(o runtime.Object) []any {
			return []any{string(o.(*corev1.Namespace).Status.Phase), AgeCell(o)}
		},
	}
}
