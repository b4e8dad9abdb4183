// Package namespace is apichain's namespace lifecycle controller, after kube's controller of
// the same name (k8s.io/kubernetes/pkg/controller/namespace): a namespace being deleted
// (phase Terminating) has its content deleted, then its "kubernetes" finalizer removed, and
// then it goes away. It works through a registry.Client, as kube's works through the API.
package namespace

import (
	"context"
	"log/slog"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Run finalizes terminating namespaces until ctx is done: on every change to a namespace
// and every second (content may be held by finalizers of its own). It returns at once when
// c does not serve namespaces. Every replica may run it: the steps are idempotent.
func Run(ctx context.Context, c *registry.Client, log *slog.Logger) {
	r, ok := c.Lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		return
	}
	changes := c.Watch(ctx, r)
	resync := time.NewTicker(time.Second)
	defer resync.Stop()
	for {
		finalizeTerminating(ctx, c, r, log)
		select {
		case <-ctx.Done():
			return
		case <-changes:
		case <-resync.C:
		}
	}
}

func finalizeTerminating(ctx context.Context, c *registry.Client, r *registry.Resource, log *slog.Logger) {
	terminating, err := c.List(ctx, r, "", "status.phase=Terminating")
	if err != nil {
		return
	}
	for _, obj := range terminating {
		ns := obj.(*corev1.Namespace)
		if ns.DeletionTimestamp == nil {
			continue
		}
		if remaining := deleteContent(ctx, c, ns.Name); remaining > 0 {
			continue
		}
		err := c.Update(ctx, r, "", ns.Name, "finalize", func(current runtime.Object) {
			spec := &current.(*corev1.Namespace).Spec
			var keep []corev1.FinalizerName
			for _, f := range spec.Finalizers {
				if f != corev1.FinalizerKubernetes {
					keep = append(keep, f)
				}
			}
			spec.Finalizers = keep
		})
		if err != nil && !apierrors.IsNotFound(err) {
			log.Warn("finalizing namespace", "namespace", ns.Name, "err", err)
		}
	}
}

// deleteContent deletes every object in namespace and returns how many remain (waiting on
// their own finalizers).
func deleteContent(ctx context.Context, c *registry.Client, namespace string) int {
	remaining := 0
	for _, r := range c.Resources() {
		if !r.Namespaced {
			continue
		}
		items, err := c.List(ctx, r, namespace, "")
		if err != nil {
			remaining++
			continue
		}
		for _, obj := range items {
			acc, err := meta.Accessor(obj)
			if err != nil {
				continue
			}
			if deleted, err := c.Delete(ctx, r, namespace, acc.GetName(), nil); err != nil || !deleted {
				if !apierrors.IsNotFound(err) {
					remaining++
				}
			}
		}
	}
	return remaining
}
